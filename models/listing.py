"""``python -m models list``: every registered model with its shape and whether its files are usable.

Everything comes from the :class:`~models.registry.ModelSpec` and small files: the model card
(``models.assets.read_model_card``), a transformer's ``config.json``, and weight-file headers
(``models.assets.check_weight_file``). No weights are loaded, so listing is instant and works
while a training run is still writing its asset. The app's Models page uses :func:`describe` too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.assets import check_weight_file, read_json_object, read_model_card
from models.base import ModelLoadError, UnknownModelError, default_device
from models.registry import ModelSpec, available_models, user_specs
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
    status: str                      # "ok" or why the model is not usable
    state: str = OK                  # OK | NOT_TRAINED | NOT_INSTALLED | BROKEN
    location: Path | None = None     # the folder with the files, when it exists
    card: dict[str, Any] = field(default_factory=dict)
    params: int | None = None        # from the card, config or weight-file headers (no weights loaded)
    size_bytes: int | None = None    # the model's files on disk


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
    return "?" if n is None else f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


def _safetensors_params(directory: Path) -> int | None:
    """Parameter count from the safetensors headers (a few KB read, no tensor data)."""
    from safetensors import safe_open

    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for f in files:
        with safe_open(str(f), "np") as fh:
            for key in fh.keys():
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
    cmd = spec.train_command or f"python -m models train {spec.family}"
    if directory is None or not directory.is_dir():
        if spec.source.kind == "pip":
            row.state, row.status = NOT_INSTALLED, f"missing ({spec.source.install_hint()})"
        elif spec.source.kind == "asset":
            row.state, row.status = NOT_TRAINED, f"not trained (run: {cmd})"
        else:
            row.state, row.status = BROKEN, f"missing: {directory}"
        return row
    row.location = directory
    try:
        card = read_model_card(directory)
        if card is None and spec.source.kind == "asset":
            # Every trainer writes the card last: no card = training not finished (or never started).
            partial = " (a checkpoint is there: training in progress or interrupted)" if any(
                directory.glob("checkpoint*")) else ""
            row.state, row.status = NOT_TRAINED, f"not trained{partial} (run: {cmd})"
            return row
        row.card = card or {}
        row.layers = row.card.get("layers", row.layers)
        row.dim = row.card.get("dim", row.dim)
        if spec.family in ("bert", "gpt") and (directory / "config.json").is_file():
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
    from models.references import inspect_reference   # imported here: references imports the registry

    assert spec.source is not None
    row = ModelRow(spec.name, spec.family, None, None, spec.source.label(), device, OK,
                   location=spec.source.directory())
    try:
        facts = inspect_reference(spec.kwargs["ref"])
    except (ModelLoadError, UnknownModelError) as exc:
        row.state, row.status = BROKEN, str(exc)
        return row
    if not facts["downloaded"]:
        row.state, row.status = NOT_INSTALLED, f"not downloaded yet ({spec.source.install_hint()})"
        return row
    keep = spec.kwargs.get("options", {}).get("layers")
    row.layers = len(keep) if keep else facts["layers"]
    row.dim, row.params, row.size_bytes = facts["dim"], facts["params"], facts["size_bytes"]
    return row


def model_rows(assets_dir: str | Path | None = None) -> list[ModelRow]:
    device = default_device().type
    return [describe(spec, device, assets_dir) for spec in available_models()]


def format_table(rows: list[ModelRow]) -> str:
    header = ("name", "family", "layers", "dim", "params", "size", "source", "device", "status")
    cells = [header] + [(r.name, r.family, "?" if r.layers is None else str(r.layers),
                         "?" if r.dim is None else str(r.dim), human_count(r.params).replace(" ", ""),
                         human_size(r.size_bytes).replace(" ", ""),
                         r.source, r.device, r.status) for r in rows]
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
