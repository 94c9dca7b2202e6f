"""The model zoo as a table for the Models page: what exists, whether its files are usable, size.

Everything comes from the registry's specs and ``models.listing.describe`` (model card, config,
weight-file headers), so listing never loads a model; a loaded model adds what only it knows.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from models.assets import read_model_card
from models.base import Embedder, default_device
from models.listing import NOT_INSTALLED, NOT_TRAINED, OK, describe
from models.registry import ModelSpec, available_models, loaded_models

FAMILY_LABELS = {"static": "static", "elmo": "ELMo (biLSTM)", "bert": "BERT-family", "gpt": "GPT (causal)"}
STATUS_LABELS = {OK: "ready", NOT_TRAINED: "not trained yet", NOT_INSTALLED: "not installed"}   # else "damaged"


def dir_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def human_size(num_bytes: int) -> str:
    size = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def weights_location(spec: ModelSpec) -> Path | None:
    """The folder with the files of ``spec`` when they are usable (card readable, weights whole), else None."""
    row = describe(spec)
    return row.location if row.state == OK else None


def model_card(spec: ModelSpec) -> dict:
    """The model card on disk ({} when there is none: pip models describe themselves once loaded).

    Raises:
        ModelLoadError: the card is corrupt (the message names the file and why).
    """
    assert spec.source is not None
    directory = spec.source.directory()
    return (read_model_card(directory) or {}) if directory is not None and directory.is_dir() else {}


def count_parameters(emb: Embedder) -> int | None:
    """Parameters of a loaded model's torch modules (for models whose card does not say)."""
    modules = [m for m in vars(emb).values() if isinstance(m, torch.nn.Module)]
    return sum(p.numel() for m in modules for p in m.parameters()) if modules else None


def model_rows(loaded: dict[str, Embedder] | None = None) -> pd.DataFrame:
    """One row per registered model: name, family, status, layers, dim, params, device, size."""
    loaded = loaded or {}
    names_loaded = set(loaded_models())
    device = default_device()
    rows = []
    for spec in available_models():
        info = describe(spec, device.type)
        card = dict(info.card)
        emb = loaded.get(spec.name)
        if emb is not None:
            card = {**card, **emb.info.card}
        layers = emb.num_layers if emb is not None else info.layers
        dim = emb.dim if emb is not None else info.dim
        params = card.get("params")
        if params is None and emb is not None:
            params = count_parameters(emb)
        rows.append({
            "model": spec.name,
            "family": FAMILY_LABELS.get(spec.family, spec.family),
            "status": "loaded" if spec.name in names_loaded else STATUS_LABELS.get(info.state, "damaged"),
            # Strings, so that "unknown" shows as a dash, not "None" or 50.0.
            "layers": str(int(layers)) if isinstance(layers, (int, float)) else "—",
            "dim": str(int(dim)) if isinstance(dim, (int, float)) else "—",
            "params": f"{params / 1e6:.1f} M" if isinstance(params, (int, float)) else "",
            "device": str(emb.device if emb is not None else device).upper().replace("CUDA", "GPU (CUDA)"),
            "size on disk": human_size(dir_size(info.location)) if info.state == OK and info.location else "—",
            "source": info.source,
            "description": spec.description,
        })
    return pd.DataFrame(rows)
