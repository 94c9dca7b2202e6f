"""Per-layer word vectors of a dataset, extracted once and memory-mapped from an on-disk cache.

Shared by the probes and the app. One dataset embedded by one model is one entry of the cache, a
``(num_words_total, dim)`` file per layer and a ``meta.json`` (their layout: ``features.store``).
``meta.json`` records the format version, the model fingerprint, a SHA-256 of the sentences, the
shape, dtype, byte size and checksum of every layer file. A layer file that is missing, truncated,
corrupted, holds NaN/inf, or whose meta disagrees (other weights, sentences, format) is rebuilt with
a warning naming it: the cache never changes a result. One process at a time works on an entry
(``<entry>/.lock``; a second waits, then reuses it); files are written to temporaries named after
their writer (a killed writer's are removed later) and moved into place, ``meta.json`` last. NaN or
inf from the embedder stops with ``NonFiniteFeaturesError``, nothing cached; a cache that cannot be
written gives a warning and features in memory. docs/reliability.md lists each fault and its test.

    feats = get_features(load_embedder("minilm"), "conll2000-test", sentences)
    feats.layer(3)            # (num_words_total, 384) read-only memmap
    feats.sentence(3, 17)     # (len(sentences[17]), 384)

``keep`` stores only some words' rows (the model still sees whole sentences): the WSD probe keeps
SemCor's sense-tagged tokens, about a quarter of its 838k words, so a warm run reads a quarter of
the bytes (docs/benchmarks.md). Row r of such a layer is word ``keep[r]`` of the dataset.

Vectors are stored as float16 by default (half the disk and page cache of float32); probe scores
are unchanged to the precision we report (see docs/results/README.md for the measurement).
Pass ``dtype="float32"`` to keep full precision.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpora.errors import RequestError
from features.build import CannotWrite, Job, LayerArrays, ProgressFn, embed_into, extract_to_disk, layers_to_write
from features.checks import FeatureCacheError, NonFiniteFeaturesError, entry_lock, remove_stale_temps
from features.store import (
    check_layer,
    feature_dir,
    keep_hash,
    layer_file,
    meta_problem,
    read_meta,
    sentences_hash,
    stored,
)

__all__ = ["FeatureCacheError", "Features", "NonFiniteFeaturesError", "get_features"]

log = logging.getLogger(__name__)


@dataclass
class Features:
    """Word vectors of ``num_sentences`` sentences at several layers.

    layers:  {layer j: (num_rows, dim) array (read-only memmap when loaded from disk)}
    offsets: (num_sentences + 1,) int64; sentence i owns words offsets[i]:offsets[i+1]
    keep:    None (every word has a row, num_rows = num_words) or the sorted global word indices
             whose rows were stored (row r = word keep[r])
    """

    fingerprint: str
    dataset_key: str
    layers: dict[int, np.ndarray]
    offsets: np.ndarray
    num_layers: int  # layers the model has (not only those loaded)
    dim: int
    directory: Path | None = None
    keep: np.ndarray | None = None

    @property
    def num_words(self) -> int:
        return int(self.offsets[-1])

    def layer(self, j: int) -> np.ndarray:
        if j not in self.layers:
            raise KeyError(f"Layer {j} was not loaded (loaded: {sorted(self.layers)}).")
        return self.layers[j]

    def sentence(self, j: int, i: int) -> np.ndarray:
        if self.keep is not None:
            raise ValueError(f"{self.dataset_key}: only selected words were stored (keep=...); no whole sentences.")
        return self.layer(j)[self.offsets[i] : self.offsets[i + 1]]

    def stacked(self, layers: Sequence[int] | None = None, dtype=np.float32) -> np.ndarray:
        """(num_layers_selected, num_rows, dim) in memory, as ``dtype`` (num_rows: every word, or the kept ones)."""
        layers = sorted(self.layers) if layers is None else list(layers)
        return np.stack([np.asarray(self.layer(j), dtype=dtype) for j in layers])


def get_features(
    embedder,
    dataset_key: str,
    sentences: Sequence[Sequence[str]],
    layers: Sequence[int] | None = None,
    *,
    dtype: str = "float16",
    chunk_size: int = 512,
    progress: ProgressFn | None = None,
    show_progress: bool = True,
    root: Path | None = None,
    keep: np.ndarray | None = None,
) -> Features:
    """Per-layer word vectors of ``sentences`` under ``embedder``, from the cache or extracted now.

    Args:
        embedder: a ``models.base.Embedder``.
        dataset_key: a name for the sentences (e.g. "semcor", "ALL", "conll2000-train-limit100").
            The cache also checks a hash of the sentences, so a different list under the same key is
            detected as stale and rebuilt (use distinct keys for distinct slices to avoid churn).
        sentences: lists of words, exactly as the embedder should see them.
        layers: layer indices to return (default: all); out-of-range indices raise ValueError.
        dtype: storage dtype, "float16" or "float32".
        chunk_size: sentences per call of the embedder's row stream (``embed_rows``, ``features.build``;
            sentences are length-sorted first so each chunk has similar lengths and the embedder pads little).
        progress: optional callback(fraction_done, message), e.g. for a Streamlit progress bar.
        keep: global word indices (into the concatenated sentences) whose rows to store, sorted and
            unique; default all. Part of the cache key: another selection rebuilds the entry.

    Returns Features with (num_words_total, dim) arrays memory-mapped read-only from the cache
    (in memory, ``directory=None``, when the cache cannot be written).
    Raises NonFiniteFeaturesError (a FeatureCacheError) when the embedder returns NaN or inf.
    """
    num_layers, dim = embedder.num_layers, embedder.dim
    if getattr(embedder, "stateful", False):
        # A stateful ELMo's vectors depend on what it ran before and in which batch: not features
        # that can be cached, sorted into batches or compared across models.
        raise RequestError(
            f"{embedder.name} is a stateful ELMo (LSTM state carried between batches, for "
            "reproducing bilm-tf's outputs); probes need each sentence's vectors to be its own: "
            "register it without --stateful."
        )
    layers = _checked_layers(embedder, layers)
    if dtype not in ("float16", "float32"):
        raise ValueError(f"dtype must be float16 or float32, not {dtype!r}.")
    sentences = [list(map(str, s)) for s in sentences]
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    if keep is not None:
        keep = np.asarray(keep, dtype=np.int64)
        if keep.ndim != 1 or (len(keep) and (keep[0] < 0 or keep[-1] >= total)) or (np.diff(keep) <= 0).any():
            raise ValueError(f"keep must be sorted unique word indices in [0, {total}).")
    job = Job(
        embedder,
        dataset_key,
        sentences,
        lengths,
        offsets,
        keep,
        keep_hash(keep),
        dtype,
        chunk_size,
        progress,
        show_progress,
        embedder.fingerprint(),
        sentences_hash(sentences),
    )
    try:
        directory = feature_dir(job.fp, dataset_key, root)
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _in_memory(job, layers, f"cannot create the feature cache directory: {exc}")

    with entry_lock(directory) as locked:
        if locked:
            remove_stale_temps(directory)
        meta, missing = _entry_state(job, directory, layers)  # read under the lock: another process may have written
        unwritable = None
        if missing:
            # Layers stored earlier (a short disk wrote only those asked for then) stay, listed in the new
            # meta.json; a cheap check here, their checksum is verified when they are read.
            have = [
                j for j in range(num_layers) if j not in missing and meta is not None and stored(directory, meta, j)
            ]
            write = layers_to_write(job, directory, missing, have)
            kept = {str(j): meta["layers"][str(j)] for j in have if j not in write}
            try:
                extract_to_disk(job, directory, write, kept)
            except CannotWrite as exc:
                unwritable = str(exc)
        elif progress is not None:
            progress(1.0, f"{embedder.name}/{dataset_key}: features from cache")
        if unwritable is None:
            arrays = {j: np.load(directory / layer_file(j), mmap_mode="r") for j in layers}
    if unwritable is not None:  # computed without holding the lock
        return _in_memory(job, layers, unwritable)
    return Features(job.fp, dataset_key, arrays, offsets, num_layers, dim, directory, keep)


def _checked_layers(embedder, layers: Sequence[int] | None) -> list[int]:
    """``layers`` as ints (default: every layer); ValueError naming any the embedder does not have."""
    num_layers = embedder.num_layers
    layers = list(range(num_layers)) if layers is None else [int(j) for j in layers]
    bad = [j for j in layers if not 0 <= j < num_layers]
    if bad:
        raise ValueError(f"Layer(s) {bad} out of range: {embedder.name} has layers 0..{num_layers - 1}.")
    return layers


def _entry_state(job: Job, directory: Path, layers: list[int]) -> tuple[dict | None, list[int]]:
    """(the entry's meta, None when absent or stale; the asked-for layers it lacks or holds broken), each stale
    entry or broken layer logged: it is rebuilt."""
    meta = read_meta(directory)
    stale = meta_problem(
        directory,
        meta,
        job.fp,
        job.s_hash,
        int(job.offsets[-1]),
        job.keep_hash,
        job.dtype,
        job.embedder.dim,
        job.embedder.computed_with,
    )
    if stale:  # a meta.json that cannot be read is damaged, one written for another request stale
        state = "damaged" if meta is None else "stale"
        log.warning("Feature cache %s is %s (%s); rebuilding.", directory, state, stale)
        meta = None
    missing = []
    for j in layers:
        why = check_layer(directory, meta, j)
        if why is not None:
            if meta is not None:  # an entry existed but is broken: say so
                log.warning("Feature cache %s layer %d invalid (%s); rebuilding.", directory, j, why)
            missing.append(j)
    return meta, missing


def _in_memory(job: Job, layers: list[int], why: str) -> Features:
    """The requested layers computed now and kept in memory (the cache cannot be written)."""
    emb = job.embedder
    log.warning(
        "Feature cache not writable (%s); computing %s features for %s in memory (not cached).", why, emb.name, job.key
    )
    arrays = {j: np.empty((job.num_rows, emb.dim), dtype=job.dtype) for j in layers}
    embed_into(job, LayerArrays(arrays))
    for arr in arrays.values():
        arr.setflags(write=False)
    return Features(job.fp, job.key, arrays, job.offsets, emb.num_layers, emb.dim, None, job.keep)
