"""A local transformers checkpoint folder: validated before loading, its fast tokenizer, its fingerprint.

Validation fails early with :class:`~models.base.ModelLoadError` naming the file and the reason
(missing folder or config.json, a config that is not a JSON object or has no ``model_type``, no
weights, a truncated or corrupt safetensors file) instead of letting transformers raise deep inside.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerFast

from models.assets import check_safetensors, read_json_object
from models.base import ModelLoadError


def check_checkpoint_dir(path: Path) -> None:
    """Fail early, naming the file and the reason, instead of letting transformers raise deep inside."""
    if not path.exists():
        raise ModelLoadError(f"Model directory {path} does not exist.")
    if not path.is_dir():
        raise ModelLoadError(f"{path} is not a directory (expected a checkpoint folder with config.json).")
    config = path / "config.json"
    if not config.is_file():
        raise ModelLoadError(f"{config}: missing (not a transformers checkpoint directory).")
    cfg = read_json_object(config, "config")
    if "model_type" not in cfg:
        raise ModelLoadError(f"{config}: no 'model_type' key; not a transformers config.")
    weights = sorted(path.glob("*.safetensors"))
    if not weights and not (path / "pytorch_model.bin").is_file():
        raise ModelLoadError(f"{path}: no weights file (model.safetensors or pytorch_model.bin).")
    for file in weights:
        check_safetensors(file)


def load_tokenizer(path: Path) -> PreTrainedTokenizerFast:
    try:
        tok = AutoTokenizer.from_pretrained(str(path), use_fast=True, local_files_only=True)
    except Exception as exc:  # transformers raises OSError/ValueError/JSON errors depending on the file
        files = ", ".join(sorted(p.name for p in path.glob("*token*"))) or "none"
        raise ModelLoadError(f"{path}: cannot load the tokenizer (tokenizer files: {files}): {exc}") from exc
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(f"{path}: needs a fast tokenizer (tokenizer.json) for word alignment.")
    return tok


def fingerprint_files(path: Path) -> str:
    """Hash of config + tokenizer contents and the weights' sizes (cheap, changes when weights change)."""
    h = hashlib.sha1()
    for name in ("config.json", "tokenizer.json"):
        f = path / name
        if f.is_file():
            h.update(f.read_bytes())
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}".encode())
        with open(f, "rb") as fh:  # header bytes: tensor names, shapes and offsets
            h.update(fh.read(65536))
    return h.hexdigest()[:16]
