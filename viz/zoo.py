"""The model zoo as a table for the Models page: what exists, whether its files are usable, size.

Everything comes from the registry's specs and ``models.listing.describe`` (model card, config,
weight-file headers), so listing never loads a model; a loaded model adds what only it knows.
"""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from models.assets import read_model_card
from models.base import Embedder, default_device
from models.listing import NOT_INSTALLED, NOT_TRAINED, OK, ModelRow, describe, human_count, human_size
from models.registry import ModelSpec, available_models, loaded_models

FAMILY_LABELS = {"static": "static", "elmo": "ELMo (biLSTM)", "bert": "BERT-family", "gpt": "GPT (causal)"}
STATUS_LABELS = {OK: "ready", NOT_TRAINED: "not trained yet", NOT_INSTALLED: "not installed"}   # else "damaged"


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


def npy_params(row: ModelRow) -> int | None:
    """A static model's parameter count from its ``.npy`` vector matrices' headers (no data read)."""
    if row.location is None or not Path(row.location).is_dir():
        return None
    total = 0
    for f in sorted(Path(row.location).glob("*.npy")):
        try:
            total += int(np.prod(np.load(f, mmap_mode="r").shape))
        except (OSError, ValueError):
            return None
    return total or None


def full_card(spec: ModelSpec, row: ModelRow, card: dict, emb: Embedder | None = None) -> dict:
    """What the Models page shows for one model, loaded or not: its facts from the registry and the
    files (shape, parameters, size, where it comes from, how it is trained), the card on disk, and
    once loaded what only the loaded model knows (device, content fingerprint, its own card)."""
    assert spec.source is not None
    facts: dict = {"name": spec.name, "family": FAMILY_LABELS.get(spec.family, spec.family),
                   "description": spec.description,
                   "layers": row.layers, "dim": row.dim,
                   "params": human_count(row.params or card.get("params") or npy_params(row))
                   if (row.params or card.get("params") or npy_params(row)) else None,
                   "size on disk": human_size(row.size_bytes) if row.size_bytes is not None else None,
                   "source": row.source, "status": STATUS_LABELS.get(row.state, row.status)}
    if spec.source.kind == "pip":
        try:
            facts["package"] = f"{spec.source.location} {metadata.version(spec.source.location)}"
        except metadata.PackageNotFoundError:
            facts["package"] = f"{spec.source.location} (not installed)"
    if spec.files:
        facts["files"] = list(spec.files)
    if spec.train_command:
        facts["trained with"] = spec.train_command
    if card:
        facts["model card"] = card
    if emb is not None:
        facts["loaded"] = {"device": str(emb.device), "layers": emb.num_layers, "dim": emb.dim,
                           "fingerprint": emb.fingerprint(), **({"card": emb.info.card} if emb.info.card else {})}
    return {k: v for k, v in facts.items() if v not in (None, "", [])}


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
        params = info.params or card.get("params") or npy_params(info)
        if params is None and emb is not None:
            params = count_parameters(emb)
        rows.append({
            "model": spec.name,
            "family": FAMILY_LABELS.get(spec.family, spec.family),
            "status": "loaded" if spec.name in names_loaded else STATUS_LABELS.get(info.state, "damaged"),
            # Strings, so that "unknown" shows as a dash, not "None" or 50.0.
            "layers": str(int(layers)) if isinstance(layers, (int, float)) else "—",
            "dim": str(int(dim)) if isinstance(dim, (int, float)) else "—",
            "params": human_count(int(params)) if isinstance(params, (int, float)) else "",
            "device": str(emb.device if emb is not None else device).upper().replace("CUDA", "GPU (CUDA)"),
            "size on disk": human_size(info.size_bytes) if info.size_bytes is not None else "—",
            "source": info.source,
            "description": spec.description,
        })
    return pd.DataFrame(rows)


def facts_frame(rows: list[ModelRow]) -> pd.DataFrame:
    """What ``python -m models list`` shows, for rows just checked (the Models page's add form)."""
    return pd.DataFrame([{"model": r.name, "family": FAMILY_LABELS.get(r.family, r.family),
                          "layers": "?" if r.layers is None else str(r.layers), "dim": "?" if r.dim is None else str(r.dim),
                          "params": human_count(r.params), "size on disk": human_size(r.size_bytes),
                          "source": r.source, "status": r.status} for r in rows])
