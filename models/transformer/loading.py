"""Build the base model of a checkpoint and load its weights, refusing whatever would run with random weights;
the positions one forward pass may use, and the hidden states to keep.

The class is transformers' own base model for the config (``MODEL_MAPPING``: ``BertModel``,
``LlamaModel``, ``T5Model`` …), never a task head: hidden states are all the embedders read, so an
LM head (``lm_head.*``, hundreds of MB for a large vocabulary) or a pooler is not even built
(``add_pooling_layer=False`` where the class takes it). The checkpoint's head tensors are then
"unexpected" and ignored. Of an encoder-decoder (T5, BART) only the encoder is kept.

**Checked without loading** (``models add`` / ``models list``, :func:`check_tensors`): the same
``from_pretrained`` call, given instead of the files a state dict of meta tensors with the names, shapes
and dtypes in the weight files (transformers' ``load_state_dict(map_location="meta")``: safetensors
headers; a torch pickle opened ``weights_only`` onto the meta device, no tensor data read) and
``device_map`` meta. transformers renames, adds or strips the ``bert.``-style prefix, ties weights and
reports missing / unexpected / mis-shaped keys exactly as when loading, and ``check_loading_info``
judges that report: one rule for ``add`` and load.

Eager attention: the one implementation that returns attention probabilities. ``from_pretrained``
runs with ``output_loading_info=True`` and ``ignore_mismatched_sizes=True`` so that every missing,
extra or mis-shaped tensor is named by ``refusals.check_loading_info`` rather than reported in a
generic error; transformers' own loading report is silenced for the call, since ours replaces it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import PretrainedConfig
from transformers.modeling_utils import load_state_dict
from transformers.models.auto.modeling_auto import MODEL_MAPPING
from transformers.utils import logging as hf_logging

from corpora.errors import RequestError
from models.base import ModelLoadError
from models.transformer.refusals import check_loading_info, weight_files


def model_class(config: PretrainedConfig) -> type:
    """transformers' base model class for ``config`` (e.g. BertModel for a BertConfig)."""
    try:
        cls = MODEL_MAPPING[type(config)]
    except KeyError:
        raise ModelLoadError(f"transformers has no base model class for model_type {config.model_type!r}.") from None
    if isinstance(cls, tuple):  # Funnel: its layers pool the sequence, so no layer has a vector per piece
        names = ", ".join(c.__name__ for c in cls)
        raise ModelLoadError(
            f"model_type {config.model_type!r} is not supported: transformers gives it several base models "
            f"({names}), whose layers do not keep one vector per token, so they cannot give word vectors."
        )
    return cls


def init_kwargs(cls: type) -> dict:
    """Constructor options that skip modules the embedders never run (the pooler)."""
    return {"add_pooling_layer": False} if "add_pooling_layer" in inspect.signature(cls.__init__).parameters else {}


def _not_load_report(record: logging.LogRecord) -> bool:
    return "LOAD REPORT" not in str(record.msg)


@contextmanager
def _quiet_loading(name: str = "transformers.modeling_utils", bar: bool = True) -> Iterator[None]:
    """transformers' load report silenced (ours replaces it), and its "Loading weights" bar unless ``bar``."""
    # A filter, not a level: transformers runs extra checks when that logger's level is raised.
    log = logging.getLogger(name)
    log.addFilter(_not_load_report)
    shown = hf_logging.is_progress_bar_enabled()
    if not bar:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        log.removeFilter(_not_load_report)
        if shown and not bar:
            hf_logging.enable_progress_bar()


def _from_pretrained(
    path: Path, config: PretrainedConfig, dtype: torch.dtype, device_map: str | dict | None, state_dict: dict | None
) -> torch.nn.Module:
    """The kept model (see :func:`load_model`), built by ``from_pretrained`` from the files or from ``state_dict``,
    its loading report judged by ``check_loading_info``."""
    cls = model_class(config)
    kwargs = dict(
        config=config,
        local_files_only=True,
        trust_remote_code=False,
        attn_implementation="eager",
        dtype=dtype,
        output_loading_info=True,
        ignore_mismatched_sizes=True,
        **init_kwargs(cls),
    )
    if device_map is not None:
        kwargs["device_map"] = device_map
    try:
        with _quiet_loading(bar=state_dict is None):
            if state_dict is None:
                model, info = cls.from_pretrained(str(path), **kwargs)
            else:
                model, info = cls.from_pretrained(None, state_dict=state_dict, **kwargs)
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(f"{path}: cannot load the weights ({type(exc).__name__}: {exc}).") from exc
    kept = model.get_encoder() if getattr(config, "is_encoder_decoder", False) else model
    check_loading_info(path, model, kept, info)
    return kept


def load_model(
    path: Path, config: PretrainedConfig, dtype: torch.dtype, device_map: str | dict | None = None
) -> torch.nn.Module:
    """The model whose hidden states the embedder reads: the base model, or the encoder of an encoder-decoder.

    Raises:
        ModelLoadError: transformers cannot load the files, or ``check_loading_info`` refuses them.
    """
    return _from_pretrained(path, config, dtype, device_map, None).eval()


def check_tensors(path: Path, config: PretrainedConfig) -> torch.nn.Module:
    """What :func:`load_model` would refuse for the weights' names and shapes, no tensor data read (module doc).
    Returns the kept model on the meta device.

    Raises:
        ModelLoadError: a missing, extra or mis-shaped tensor (``check_loading_info``), as at load.
    """
    tensors: dict[str, torch.Tensor] = {}
    for file in weight_files(path):
        try:
            tensors.update(load_state_dict(file, map_location="meta", weights_only=True))
        except Exception as exc:  # an unknown safetensors dtype; corrupt files were refused before
            raise ModelLoadError(f"{file}: cannot read the tensors' names and shapes ({exc}).") from exc
    return _from_pretrained(path, config, torch.float32, {"": "meta"}, tensors)


def context_size(config: PretrainedConfig, model: torch.nn.Module, tokenizer_max: int) -> int:
    """Positions one forward pass may use: the config's, capped by the tokenizer's ``model_max_length``."""
    tok_max = int(min(tokenizer_max, 10**9))  # transformers' "no limit" is 1e30
    n = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    n = n if n is not None and int(n) > 0 else None  # XLNet's -1: no limit (relative positions)
    n = min(int(n), tok_max) if n else (tok_max if tok_max < 10**6 else 512)  # relative positions (T5): 512
    emb = getattr(model, "embeddings", None)
    pad = getattr(emb, "padding_idx", None)
    if isinstance(pad, int) and hasattr(emb, "position_embeddings"):  # RoBERTa: positions start after padding
        n = min(n, emb.position_embeddings.num_embeddings - pad - 1)
    return n


def select_layers(layers: Sequence[int] | None, total: int, name: str) -> tuple[int, ...] | None:
    """The model's own indices of the hidden states to keep (negative counts from the end); None = all.
    RequestError (a ``LabError``: one line on the command line and in the app) for a layer it does not have."""
    if layers is None:
        return None
    ids = []
    for i in layers:
        if isinstance(i, bool) or not hasattr(i, "__index__") or not -total <= int(i) < total:
            raise RequestError(
                f"layers: {i!r} is not a layer of {name}, which has layers 0..{total - 1} (0 = embedding output)."
            )
        ids.append(int(i) % total)
    if not ids or len(set(ids)) != len(ids):
        raise RequestError(f"layers must name at least one layer, each once; got {list(layers)}")
    return tuple(ids)
