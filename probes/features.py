"""Per-layer word vectors of a dataset, extracted once and memory-mapped from an on-disk cache.

Shared by the probes and the app. One dataset embedded by one model is stored as

    cache_dir()/features/<fingerprint>/<dataset_key>/layer_<j>.npy   (num_words_total, dim)
    cache_dir()/features/<fingerprint>/<dataset_key>/meta.json

``meta.json`` records the format version, the model fingerprint, a SHA-256 of the sentences, the
shape and dtype of every layer file and its exact byte size. A layer file that is missing,
truncated, unreadable, or whose meta disagrees (other model weights, other sentences, other
format version) is rebuilt with a log message; the cache never changes a result, it only saves
time. Every file is written to a temporary name and moved into place with ``os.replace``, and
``meta.json`` is written last, so a concurrent reader sees either the old complete entry or the
new complete entry, never a half-written one.

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

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from tqdm.auto import tqdm

from probes.feature_store import atomic_write_text, check_layer, feature_dir, read_meta, sentences_hash

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
ProgressFn = Callable[[float, str], None]


class FeatureCacheError(RuntimeError):
    """The feature cache cannot be used (e.g. the cache directory is not writable)."""


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
    num_layers: int              # layers the model has (not only those loaded)
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
        return self.layer(j)[self.offsets[i]:self.offsets[i + 1]]

    def stacked(self, layers: Sequence[int] | None = None, dtype=np.float32) -> np.ndarray:
        """(num_layers_selected, num_words_total, dim) in memory, as ``dtype``."""
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
        chunk_size: sentences per ``embedder.embed`` call (sentences are length-sorted first so each
            chunk has similar lengths and the embedder pads little).
        progress: optional callback(fraction_done, message), e.g. for a Streamlit progress bar.
        keep: global word indices (into the concatenated sentences) whose rows to store, sorted and
            unique; default all. Part of the cache key: another selection rebuilds the entry.

    Returns Features with (num_words_total, dim) arrays memory-mapped read-only from the cache.
    """
    num_layers, dim = embedder.num_layers, embedder.dim
    if layers is None:
        layers = list(range(num_layers))
    layers = [int(j) for j in layers]
    bad = [j for j in layers if not 0 <= j < num_layers]
    if bad:
        raise ValueError(f"Layer(s) {bad} out of range: {embedder.name} has layers 0..{num_layers - 1}.")
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
    keep_hash = None if keep is None else hashlib.sha256(keep.tobytes()).hexdigest()
    fp = embedder.fingerprint()
    directory = feature_dir(fp, dataset_key, root)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FeatureCacheError(f"Cannot create the feature cache directory {directory}: {exc}") from exc
    s_hash = sentences_hash(sentences)

    meta = read_meta(directory)
    stale_reason = None
    if meta is not None:
        if meta.get("version") != FORMAT_VERSION:
            stale_reason = f"format version {meta.get('version')} != {FORMAT_VERSION}"
        elif meta.get("fingerprint") != fp:
            stale_reason = "written by another model version (fingerprint differs)"
        elif meta.get("sentences_hash") != s_hash or meta.get("num_words") != total:
            stale_reason = "written for other sentences (content hash differs)"
        elif meta.get("keep_hash") != keep_hash:
            stale_reason = "written for another selection of words (keep differs)"
        elif meta.get("dtype") != dtype or meta.get("dim") != dim:
            stale_reason = f"dtype/dim {meta.get('dtype')}/{meta.get('dim')} differ from {dtype}/{dim}"
    if stale_reason:
        log.warning("Feature cache %s is stale (%s); rebuilding.", directory, stale_reason)
        meta = None

    missing = []
    for j in layers:
        why = check_layer(directory, meta, j)
        if why is not None:
            if meta is not None:  # an entry existed but is broken: say so
                log.warning("Feature cache %s layer %d invalid (%s); rebuilding.", directory, j, why)
            missing.append(j)

    if missing:
        meta = _extract(embedder, sentences, lengths, offsets, directory, meta, fp, s_hash, dtype,
                        chunk_size, progress, show_progress, dataset_key, keep, keep_hash)
    elif progress is not None:
        progress(1.0, f"{embedder.name}/{dataset_key}: features from cache")

    arrays = {j: np.load(directory / f"layer_{j}.npy", mmap_mode="r") for j in layers}
    return Features(fp, dataset_key, arrays, offsets, num_layers, dim, directory, keep)


def _extract(embedder, sentences, lengths, offsets, directory: Path, old_meta: dict | None, fp: str,
             s_hash: str, dtype: str, chunk_size: int, progress: ProgressFn | None, show_progress: bool,
             dataset_key: str, keep: np.ndarray | None = None, keep_hash: str | None = None) -> dict:
    """Embed every sentence once and write all layers (the model computes them all anyway)."""
    num_layers, dim = embedder.num_layers, embedder.dim
    total = int(offsets[-1])
    num_rows = total if keep is None else len(keep)
    # Sentence i's stored rows: row_start[i]:row_start[i+1]; with keep, its words keep[...] - offsets[i].
    row_start = offsets if keep is None else np.searchsorted(keep, offsets)
    log.info("Extracting %s features for %s: %d sentences, %d words.", embedder.name, dataset_key,
             len(sentences), total)
    tmp_paths: dict[int, Path] = {}
    mmaps: dict[int, np.ndarray] = {}
    try:
        for j in range(num_layers):
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"layer_{j}.", suffix=".npy.tmp")
            os.close(fd)
            tmp_paths[j] = Path(tmp)
            mmaps[j] = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(num_rows, dim))
        # Longest first: similar lengths share a chunk, and a too-long sentence fails early.
        order = np.argsort(-lengths, kind="stable")
        bar = tqdm(total=total, unit="word", desc=f"{embedder.name}/{dataset_key}", disable=not show_progress,
                   mininterval=2.0)
        done = 0
        for start in range(0, len(order), chunk_size):
            idx = order[start:start + chunk_size]
            outs = embedder.embed([sentences[i] for i in idx])
            for i, out in zip(idx, outs):
                n = int(lengths[i])
                if out.vectors.shape != (num_layers, n, dim):
                    raise FeatureCacheError(
                        f"{embedder.name} returned vectors of shape {out.vectors.shape} for a sentence of "
                        f"{n} words; expected {(num_layers, n, dim)}.")
                lo, hi = int(row_start[i]), int(row_start[i + 1])
                if keep is None:
                    for j in range(num_layers):
                        mmaps[j][lo:hi] = out.vectors[j]
                elif hi > lo:
                    words = keep[lo:hi] - offsets[i]
                    for j in range(num_layers):
                        mmaps[j][lo:hi] = out.vectors[j][words]
                done += n
            bar.update(sum(int(lengths[i]) for i in idx))
            if progress is not None:
                progress(done / max(total, 1), f"{embedder.name}/{dataset_key}: {done:,}/{total:,} words")
        bar.close()
        layer_meta = {}
        for j in range(num_layers):
            mmaps[j].flush()
            del mmaps[j]
            final = directory / f"layer_{j}.npy"
            os.replace(tmp_paths[j], final)
            layer_meta[str(j)] = {"shape": [num_rows, dim], "dtype": dtype, "nbytes": final.stat().st_size}
    finally:
        for tmp in tmp_paths.values():
            tmp.unlink(missing_ok=True)
    meta = {
        "version": FORMAT_VERSION,
        "fingerprint": fp,
        "model": embedder.name,
        "dataset_key": dataset_key,
        "sentences_hash": s_hash,
        "num_sentences": len(sentences),
        "num_words": total,
        "keep_hash": keep_hash,
        "num_rows": num_rows,
        "dim": dim,
        "dtype": dtype,
        "layers": layer_meta,
    }
    atomic_write_text(directory / "meta.json", json.dumps(meta, indent=1))
    return meta
