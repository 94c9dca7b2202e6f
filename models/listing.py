"""The model zoo from files only: ``python -m models list`` and the Models page's tables and cards.

Everything comes from the :class:`~models.spec.ModelSpec` and small files: the model card
(``models.assets.read_model_card``), a transformer's ``config.json``, and weight-file headers
(``models.assets.check_weight_file``). No weights are loaded, so listing is instant and works
while a training run is still writing its asset; a loaded model adds what only it knows
(device, content fingerprint) to :func:`zoo_frame` and :func:`full_card`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors import safe_open

from models.assets import check_weight_file, read_json_object, read_model_card
from models.base import Embedder, ModelLoadError, UnknownModelError, default_device
from models.references import inspect_reference
from models.registry import available_models, loaded_models, user_specs
from models.spec import ModelSpec, get_family
from models.user_registry import registry_file

REFERENCE_LOADER = "models.references:load_reference"

# ModelRow.state values
OK, NOT_TRAINED, NOT_INSTALLED, BROKEN = "ok", "not trained", "not installed", "broken"


@dataclass
class ModelRow:
    name: str
    family: str
    layers: int | None
    dim: int | None
    source: str
    device: str
    status: str  # "ok" or why the model is not usable
    state: str = OK  # OK | NOT_TRAINED | NOT_INSTALLED | BROKEN
    location: Path | None = None  # the folder with the files, when it exists
    card: dict[str, Any] = field(default_factory=dict)
    params: int | None = None  # from the card, config or weight-file headers (no weights loaded)
    size_bytes: int | None = None  # the model's files on disk


def dir_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def human_size(num_bytes: int | None) -> str:
    if num_bytes is None:
        return "?"
    size = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def human_count(n: int | None) -> str:
    """ "1.23 B", "22.7 M", or the count itself under 100,000 (a tiny model read "0.0 M")."""
    if n is None:
        return "?"
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M" if n >= 1e5 else f"{n:,}"


def _safetensors_params(directory: Path) -> int | None:
    """Parameter count from the safetensors headers (a few KB read, no tensor data)."""
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for f in files:
        with safe_open(str(f), "np") as fh:
            for key in fh.keys():  # noqa: SIM118 — a safe_open handle, not a dict: not iterable
                n = 1
                for d in fh.get_slice(key).get_shape():
                    n *= int(d)
                total += n
    return total


def _transformer_shape(config: dict) -> tuple[int | None, int | None]:
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    dim = config.get("hidden_size", config.get("n_embd"))
    return (int(layers) + 1 if layers is not None else None), (int(dim) if dim is not None else None)


def describe(spec: ModelSpec, device: str | None = None, assets_dir: str | Path | None = None) -> ModelRow:
    """Metadata and status of one registered model, from files only.

    Layers/dim: a transformer's config.json, else the model card, else the spec.
    ``assets_dir`` replaces ``assets/`` (tests).
    """
    assert spec.source is not None
    device = device or default_device().type
    if spec.loader == REFERENCE_LOADER:
        return describe_reference(spec, device)
    row = ModelRow(spec.name, spec.family, spec.layers, spec.dim, spec.source.label(), device, OK)
    directory = spec.source.directory(assets_dir)
    how = f"run: {spec.train_command}" if spec.train_command else "see docs/models.md"
    if directory is None or not directory.is_dir():
        if spec.source.kind == "pip":
            row.state, row.status = NOT_INSTALLED, f"missing ({spec.source.install_hint()})"
        elif spec.source.kind == "asset":
            row.state, row.status = NOT_TRAINED, f"not trained ({how})"
        else:
            row.state, row.status = BROKEN, f"missing: {directory}"
        return row
    row.location = directory
    try:
        card = read_model_card(directory)
        if card is None and spec.source.kind == "asset":
            # Every trainer writes its folder whole, card included: no card = a run not finished (or never started).
            partial = (
                " (a checkpoint is there: training in progress or interrupted)"
                if any(directory.glob("checkpoint*"))
                else ""
            )
            row.state, row.status = NOT_TRAINED, f"not trained{partial} ({how})"
            return row
        row.card = card or {}
        row.layers = row.card.get("layers", row.layers)
        row.dim = row.card.get("dim", row.dim)
        if (directory / "config.json").is_file():  # a transformer's: its shape wins over the card's
            layers, dim = _transformer_shape(read_json_object(directory / "config.json", "config"))
            row.layers, row.dim = layers or row.layers, dim or row.dim
        for name in spec.files:
            check_weight_file(directory / name)
        row.params = row.card.get("params") or _safetensors_params(directory)
        row.size_bytes = dir_size(directory)
    except ModelLoadError as exc:
        row.state, row.status = BROKEN, str(exc)
    return row


def describe_reference(spec: ModelSpec, device: str) -> ModelRow:
    """A user model (path, hub id, ELMo files, vectors file): its facts from config and file headers."""
    assert spec.source is not None
    row = ModelRow(
        spec.name, spec.family, None, None, spec.source.label(), device, OK, location=spec.source.directory()
    )
    try:
        facts = inspect_reference(spec.kwargs["ref"])
    except (ModelLoadError, UnknownModelError) as exc:
        row.state, row.status = BROKEN, str(exc)
        return row
    if not facts["downloaded"]:
        row.state, row.status = NOT_INSTALLED, f"not downloaded yet ({spec.source.install_hint()})"
        return row
    problem = facts.get("refused") or _options_problem(spec.kwargs.get("options", {}), facts)
    if problem:  # the loader would refuse it: never "ok" (issue 27)
        row.state, row.status = BROKEN, problem
        return row
    keep = spec.kwargs.get("options", {}).get("layers")
    row.layers = len(keep) if keep else facts["layers"]
    row.dim, row.params, row.size_bytes = facts["dim"], facts["params"], facts["size_bytes"]
    return row


def _options_problem(options: dict, facts: dict) -> str | None:
    """An option the model cannot take: ``layers`` it does not have, a ``window`` past its positions."""
    total, keep, window = facts.get("layers"), options.get("layers"), options.get("window")
    if total and keep and not all(-total <= int(i) < total for i in keep):
        return f"layers {list(keep)}: the model has layers 0..{total - 1} (0 = the embedding output)."
    positions = facts.get("positions")
    if positions and window and int(window) > int(positions):
        return f"window {window}: the model reads at most {positions} positions per forward pass."
    return None


def model_rows(assets_dir: str | Path | None = None) -> list[ModelRow]:
    device = default_device().type
    return [describe(spec, device, assets_dir) for spec in available_models()]


def format_table(rows: list[ModelRow]) -> str:
    header = ("name", "family", "layers", "dim", "params", "size", "source", "device", "status")
    cells = [header] + [
        (
            r.name,
            r.family,
            "?" if r.layers is None else str(r.layers),
            "?" if r.dim is None else str(r.dim),
            human_count(r.params).replace(" ", ""),
            human_size(r.size_bytes).replace(" ", ""),
            r.source,
            r.device,
            r.status,
        )
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(header))).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_model_table(assets_dir: str | Path | None = None) -> int:
    """Print the table; exit status 0 (a model that is not usable is a row, not a failure)."""
    print(format_table(model_rows(assets_dir)))
    _, problem = user_specs()
    if problem:
        print(f"\nmodel registry {registry_file()}: {problem}")
    return 0


# ----------------------------------------------------------------------------- the Models page
STATUS_LABELS = {OK: "ready", NOT_TRAINED: "not trained yet", NOT_INSTALLED: "not installed"}  # else "damaged"


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
    params = row.params or card.get("params") or npy_params(row)
    facts: dict = {
        "name": spec.name,
        "family": spec.traits.label,
        "description": spec.description,
        "layers": row.layers,
        "dim": row.dim,
        "params": human_count(params) if params else None,
        "size on disk": human_size(row.size_bytes) if row.size_bytes is not None else None,
        "source": row.source,
        # as the models table says it (it read "ready" beside a table row saying "loaded")
        "status": "loaded" if emb is not None else STATUS_LABELS.get(row.state, row.status),
    }
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
        facts["loaded"] = {
            "device": str(emb.device),
            "layers": emb.num_layers,
            "dim": emb.dim,
            "fingerprint": emb.fingerprint(),
            **({"card": emb.info.card} if emb.info.card else {}),
        }
    return {k: v for k, v in facts.items() if v not in (None, "", [])}


def count_parameters(emb: Embedder) -> int | None:
    """Parameters of a loaded model's torch modules (for models whose card does not say)."""
    modules = [m for m in vars(emb).values() if isinstance(m, torch.nn.Module)]
    return sum(p.numel() for m in modules for p in m.parameters()) if modules else None


def zoo_frame(loaded: dict[str, Embedder] | None = None) -> pd.DataFrame:
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
        rows.append(
            {
                "model": spec.name,
                "family": spec.traits.label,
                "status": "loaded" if spec.name in names_loaded else STATUS_LABELS.get(info.state, "damaged"),
                # Strings, so that "unknown" shows as a dash, not "None" or 50.0.
                "layers": str(int(layers)) if isinstance(layers, (int, float)) else "—",
                "dim": str(int(dim)) if isinstance(dim, (int, float)) else "—",
                "params": human_count(int(params)) if isinstance(params, (int, float)) else "",
                "device": str(emb.device if emb is not None else device).upper().replace("CUDA", "GPU (CUDA)"),
                "size on disk": human_size(info.size_bytes) if info.size_bytes is not None else "—",
                "source": info.source,
                "description": spec.description,
            }
        )
    return pd.DataFrame(rows)


def facts_frame(rows: list[ModelRow]) -> pd.DataFrame:
    """What ``python -m models list`` shows, for rows just checked (the Models page's add form)."""
    return pd.DataFrame(
        [
            {
                "model": r.name,
                "family": get_family(r.family).label,
                "layers": "?" if r.layers is None else str(r.layers),
                "dim": "?" if r.dim is None else str(r.dim),
                "params": human_count(r.params),
                "size on disk": human_size(r.size_bytes),
                "source": r.source,
                "status": r.status,
            }
            for r in rows
        ]
    )
