"""The models layer's errors, in a module of their own so that naming them imports no torch.

The lab's own are ``corpora.errors.LabError``: the command line and the app print them as one message.
``models.base`` re-exports them (``from models.base import ModelLoadError`` keeps working).

Out of device memory has more than one face. torch raises ``torch.OutOfMemoryError`` when its caching allocator
cannot get a block, but a library that allocates for itself says the same as a plain ``RuntimeError``: cuBLAS's
handle or workspace (``CUBLAS_STATUS_ALLOC_FAILED``), cuDNN's (``CUDNN_STATUS_ALLOC_FAILED``), a raw ``cudaMalloc``
("CUDA error: out of memory"). :func:`is_out_of_memory` is the one test for all of them: the embedders' re-pack
(``models.oom``) and the cluster's retry with a smaller budget both use it; any other ``RuntimeError`` is a bug.
"""

from __future__ import annotations

from corpora.errors import LabError


class ModelLoadError(LabError, RuntimeError):
    """A checkpoint is missing, truncated or malformed; the message says which file and why."""


class UnknownModelError(LabError, KeyError):
    """No model of that name is registered."""


class UnknownTextError(ModelLoadError):
    """The model loaded, but the text is mostly words it cannot read (a vectors file's words written another way,
    another alphabet): their vectors would all be zeros or the unknown token's. A ``ModelLoadError`` for the
    callers that catch those; the app says it as the text's problem, not a load failure."""


# Messages of the RuntimeErrors that mean "out of device memory" (lower case; matched as substrings).
OOM_MARKERS = ("out of memory", "cublas_status_alloc_failed", "cudnn_status_alloc_failed")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is a device running out of memory: torch's ``OutOfMemoryError`` (by name: no torch
    imported here, and a Ray task's error arrives as its cause) or a library's ``RuntimeError``."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc).lower() for m in OOM_MARKERS)
