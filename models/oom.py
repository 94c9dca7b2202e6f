"""Out of device memory in a batch loop: the one way the embedders recover from it.

What counts as out of memory (torch's error, or cuBLAS's, cuDNN's or CUDA's ``RuntimeError``) is
``models.errors.is_out_of_memory``; any other ``RuntimeError`` is a bug and is raised as it is.

:func:`run_or_oom` runs one batch and returns its out-of-memory error instead of raising it, the traceback
dropped: its frames hold the failed batch's tensors, so the caller re-packs (and empties the CUDA cache) with
their memory free. :func:`halve_budget` is the re-pack's common part: the cache emptied, a lone row that does not
fit an error saying what to do, otherwise ``max_tokens`` halved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch

from models.errors import is_out_of_memory

log = logging.getLogger(__name__)


def run_or_oom(run: Callable[..., Any], *args) -> tuple[Any, torch.OutOfMemoryError | None]:
    """(``run(*args)``, None), or (None, its out-of-memory error as a ``torch.OutOfMemoryError``, no traceback)."""
    try:
        return run(*args), None
    except torch.OutOfMemoryError as exc:
        return None, exc.with_traceback(None)
    except RuntimeError as exc:
        if not is_out_of_memory(exc):
            raise
        return None, torch.OutOfMemoryError(str(exc))  # a new error: nothing holds the failed frames


def halve_budget(emb, exc: BaseException, failed: str, lone: str | None) -> None:
    """After an out-of-memory error in ``emb``'s batch ``failed`` (its description): the CUDA cache emptied, then
    either ``torch.OutOfMemoryError(lone)`` (``lone``: why that batch cannot be made smaller, None when it can) or
    ``emb.max_tokens`` halved and a warning logged. The caller re-packs the rows not yet run."""
    if emb.device.type == "cuda":
        torch.cuda.empty_cache()
    if lone is not None:
        raise torch.OutOfMemoryError(lone) from exc
    emb.max_tokens = max(1, emb.max_tokens // 2)
    log.warning(
        "%s: out of memory on %s; token budget halved to %d, re-packing the rest", emb.name, failed, emb.max_tokens
    )
