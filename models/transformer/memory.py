"""Memory: the dtype to run in, the weights' size before loading, what is free, and what one forward pass needs.

- ``dtype="auto"``: bf16 on a GPU that supports it, else fp16; fp32 on CPU (fp16/bf16 matmuls are
  slow on most CPUs). "fp32" / "fp16" / "bf16" force one. The built-in models keep their own rule
  (``TransformerEmbedder`` without ``dtype``), so their numbers do not change.
- :func:`estimate_memory` counts the parameters and buffers of the very class the embedder loads,
  built on the meta device (accelerate's ``init_empty_weights`` + ``from_config``): exact for every
  architecture, no weights read, no per-architecture formula. A config transformers cannot build
  (custom code) is estimated from its safetensors headers instead.
- :func:`check_fits` refuses a model whose weights alone exceed the free memory of the device
  (``torch.cuda.mem_get_info`` on a GPU, ``psutil`` on the CPU; every GPU plus the CPU for ``"auto"``).
- :func:`repack_after_oom`: out of memory in a batch, the token budget is halved and the rows not yet run
  re-packed (``TransformerEmbedder.embed`` and the streamed path alike); a lone row that does not fit is an error
  saying what it needs (:func:`oom_message`).
"""

from __future__ import annotations

import math
from pathlib import Path

import psutil
import torch
from safetensors import safe_open
from transformers import AutoModel, PretrainedConfig

from corpora.errors import RequestError
from models.base import ModelLoadError, default_device
from models.oom import halve_budget
from models.transformer.checkpoint import load_config
from models.transformer.loading import init_kwargs, model_class
from models.transformer.pieces import Row
from models.transformer.refusals import read_config, remote_code_reason, weight_files

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
_HEADER_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def device_kind(device: str | torch.device | None) -> str:
    """ "auto", "cuda" or "cpu" for a device argument (None = this machine's default)."""
    if device == "auto":
        return "auto"
    return torch.device(device).type if device is not None else default_device().type


def resolve_dtype(dtype: str, device: str | torch.device | None) -> torch.dtype:
    """The torch dtype for an option value (module doc)."""
    if dtype != "auto":
        if dtype not in DTYPES:
            raise RequestError(f"dtype must be one of auto, {', '.join(DTYPES)}; got {dtype!r}")
        return DTYPES[dtype]
    kind = device_kind(device)
    if kind == "cpu" or (kind == "auto" and not torch.cuda.is_available()):
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def header_tensors(files: list[Path]) -> tuple[int, int]:
    """(element count, bytes as stored) of the tensors in weight files, without reading any tensor data.

    safetensors: from the header; torch ``.bin``: the pickle loaded onto the meta device (``weights_only``).
    """
    count = size = 0
    for file in files:
        if file.suffix != ".safetensors":
            for t in torch.load(file, map_location="meta", weights_only=True).values():
                count, size = count + t.numel(), size + t.numel() * t.element_size()
            continue
        with safe_open(str(file), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 — a safe_open handle, not a dict: not iterable
                piece = f.get_slice(key)
                n = math.prod(int(d) for d in piece.get_shape())
                count, size = count + n, size + n * _HEADER_BYTES.get(piece.get_dtype(), 4)
    return count, size


def _meta_model_bytes(config: PretrainedConfig, dtype: torch.dtype) -> int:
    from accelerate import init_empty_weights  # lazy: accelerate, only memory estimates need it

    with init_empty_weights(include_buffers=False):
        model = AutoModel.from_config(config, **init_kwargs(model_class(config)))
    model.tie_weights()  # on the meta device from_config leaves tied embeddings as separate tensors
    item = torch.empty((), dtype=dtype).element_size()
    params = sum(p.numel() for p in model.parameters()) * item
    return params + sum(b.numel() * b.element_size() for b in model.buffers())


def estimate_memory(
    path_or_config: str | Path | PretrainedConfig, dtype: str = "auto", device: str | torch.device | None = None
) -> int:
    """Bytes the weights take once loaded in ``dtype`` on ``device`` (module doc), before loading anything.

    Raises:
        ModelLoadError: the folder is not a checkpoint (no config.json or weights).
    """
    torch_dtype = resolve_dtype(dtype, device)
    if isinstance(path_or_config, PretrainedConfig):
        return _meta_model_bytes(path_or_config, torch_dtype)
    path = Path(path_or_config)
    if remote_code_reason(read_config(path)) is None:
        return _meta_model_bytes(load_config(path), torch_dtype)
    count, _ = header_tensors(weight_files(path))  # custom code: count the tensors in the files
    return count * torch.empty((), dtype=torch_dtype).element_size()


def available_memory(device: str | torch.device | None) -> int:
    """Free bytes: the GPU's (``torch.cuda.mem_get_info``), the CPU's (``psutil``), or all of them for "auto"."""
    kind = device_kind(device)
    cpu = int(psutil.virtual_memory().available)
    if kind == "cpu":
        return cpu
    if kind == "auto":
        return cpu + sum(int(torch.cuda.mem_get_info(i)[0]) for i in range(torch.cuda.device_count()))
    return int(torch.cuda.mem_get_info(torch.device(device or "cuda"))[0])


def check_fits(what: str | Path, estimate: int, device: str | torch.device | None, dtype: torch.dtype) -> None:
    """Refuse, before loading, weights that cannot fit in the device's free memory."""
    free = available_memory(device)
    if estimate > free:
        where = "GPUs + CPU" if device_kind(device) == "auto" else str(device or default_device())
        raise ModelLoadError(
            f"{what}: its weights need about {gib(estimate)} in {str(dtype).removeprefix('torch.')}, but only "
            f"{gib(free)} is free on {where}. Use a smaller dtype (fp16/bf16), device='auto' to spread it over "
            f"several GPUs, or a machine with more memory."
        )


def forward_bytes(config: PretrainedConfig, pieces: int, rows: int, dtype: torch.dtype, with_attention: bool) -> int:
    """Rough activation memory of one forward pass that keeps every hidden state (for error messages)."""
    item = torch.empty((), dtype=dtype).element_size()
    layers = int(config.num_hidden_layers)
    heads = int(getattr(config, "num_attention_heads", 1) or 1)
    hidden = int(config.hidden_size)
    inner = int(getattr(config, "intermediate_size", 0) or 4 * hidden)
    kept = (layers + 1) * pieces * hidden + (layers * heads * pieces * pieces if with_attention else 0)
    transient = heads * pieces * pieces + pieces * inner  # one layer's attention scores and MLP
    return rows * (kept + transient) * item


def oom_message(
    name: str,
    config: PretrainedConfig,
    pieces: int,
    window: int,
    dtype: torch.dtype,
    device: torch.device,
    with_attention: bool,
) -> str:
    """Why a single row does not fit, with the estimate of what its forward pass needs."""
    need = forward_bytes(config, pieces, 1, dtype, with_attention)
    return (
        f"{name}: one window of {pieces} pieces does not fit in {device} memory even alone: its forward pass "
        f"needs about {gib(need)} beyond the weights, {gib(available_memory(device))} is free. Use a smaller "
        f"window (now {window} pieces), dtype='fp16'/'bf16', or device='auto'."
    )


def repack_after_oom(
    emb, exc: BaseException, rows: list[Row], todo: list[list[int]], with_attention: bool
) -> list[list[int]]:
    """``emb``'s batches ``todo`` (row indices; the first failed) after an out-of-memory error: the token budget
    halved and the rows not yet run re-packed; a lone row that does not fit is an error."""
    failed = todo[0]
    longest = max(len(rows[i].ids) for i in failed)
    lone = (
        oom_message(emb.name, emb.config, longest, emb.window, emb.dtype, emb.device, with_attention)
        if len(failed) == 1
        else None
    )
    halve_budget(emb, exc, f"a batch of {len(failed)} rows x {longest} pieces", lone)
    remaining = [i for batch in todo for i in batch]
    return [[remaining[j] for j in b] for b in emb._batches([rows[i] for i in remaining], with_attention)]
