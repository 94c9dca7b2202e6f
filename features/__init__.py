"""The feature cache: per-layer word vectors of a dataset under a model, extracted once, stored on disk
and memory-mapped (``extract``: a request served or rebuilt; ``build``: embedding into a new entry),
its entries and their files (``store``), integrity guards (``checks``), the entry API for callers
outside the package (``entries``), the corpus index's background build (``background``) and its command
(``python -m features index``, ``__main__``). Nothing outside ``features/`` names an entry's files; callers use:

    feats = get_features(embedder, "conll2000-test", sentences, layers)   # cached or extracted now
    has_layers(embedder, "semcor-tagged", [6]); open_layer(embedder, "semcor-tagged", 6)
    entry_files / install_entry / local_entries / entry_rel    # copying entries (cluster.storage)
"""

import importlib

from features.checks import FeatureCacheError, NonFiniteFeaturesError
from features.entries import entry_files, has_layers, install_entry, local_entries, open_layer, stored_layers
from features.store import META_FILE, data_hash, entry_rel, meta_text, read_meta, sentences_hash

#: Names of the modules that embed (they import torch), loaded on first use (PEP 562): a command that only reads
#: or copies entries never imports torch through this package (``python -m probes stats`` imports none at all).
_EMBEDDING = {"DISK_SHARE": "build", "gb": "build", "Features": "extract", "get_features": "extract"}


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str):
    if name in _EMBEDDING:
        return getattr(importlib.import_module(f"features.{_EMBEDDING[name]}"), name)
    raise AttributeError(f"module 'features' has no attribute {name!r}")


__all__ = [
    "DISK_SHARE",
    "META_FILE",
    "FeatureCacheError",
    "Features",
    "NonFiniteFeaturesError",
    "data_hash",
    "entry_files",
    "entry_rel",
    "gb",
    "get_features",
    "has_layers",
    "install_entry",
    "local_entries",
    "meta_text",
    "open_layer",
    "read_meta",
    "sentences_hash",
    "stored_layers",
]
