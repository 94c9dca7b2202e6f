"""The feature cache: per-layer word vectors of a dataset under a model, extracted once, stored on disk
and memory-mapped (``extract``: a request served or rebuilt; ``build``: embedding into a new entry),
its entries and their files (``store``), integrity guards (``checks``) and the entry API for callers
outside the package (``entries``). Nothing outside ``features/`` names an entry's files; callers use:

    feats = get_features(embedder, "conll2000-test", sentences, layers)   # cached or extracted now
    has_layers(embedder, "semcor-tagged", [6]); open_layer(embedder, "semcor-tagged", 6)
    entry_files / install_entry / local_entries / entry_rel    # copying entries (cluster.storage)
"""

from features.build import DISK_SHARE, gb
from features.checks import FeatureCacheError, NonFiniteFeaturesError
from features.entries import entry_files, has_layers, install_entry, local_entries, open_layer, stored_layers
from features.extract import Features, get_features
from features.store import META_FILE, data_hash, entry_rel, meta_text, read_meta, sentences_hash

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
