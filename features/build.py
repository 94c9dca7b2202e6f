"""Writing one feature-cache entry: embed every sentence once and fill all its layer files.

``get_features`` (``features.extract``) validates a request into a ``Job`` and holds the entry's
lock; here the sentences are embedded longest first, ``chunk_size`` at a time (similar lengths share
a chunk, a too-long sentence fails early), every vector is checked (shape, finite in the storage
dtype: ``checks.check_vectors``), and the layers are written to temporaries, checksummed and moved
into place with ``meta.json`` removed first and written last (an interrupted commit reads as absent).
``CannotWrite``: the entry cannot be written at all (read-only, no space), so the caller computes
in memory (``embed_into`` fills arrays it is given). A ``meta.json`` that cannot be written once the
layers are in place (the disk filled up meanwhile) is a warning: the run uses the layers it wrote, and
the entry, never committed, is rebuilt by the next run.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from corpora.temps import write_atomically
from features.checks import (
    FeatureCacheError,
    NonFiniteFeaturesError,
    all_finite,
    check_vectors,
    file_checksum,
    remember_verified,
    reserve,
    temp_path,
)
from features.store import FORMAT_VERSION, META_FILE, layer_file, library_versions, meta_text

log = logging.getLogger("features.extract")  # the cache's one logger (also ``features.checks``)

ProgressFn = Callable[[float, str], None]
DISK_SHARE = 0.9  # of the free space an extraction may fill


class CannotWrite(Exception):
    """The cache entry cannot be written (read-only, no space): compute in memory instead."""


@dataclass
class Job:
    """One request, validated: what to embed and how to store it."""

    embedder: object
    key: str
    sentences: list[list[str]]
    lengths: np.ndarray
    offsets: np.ndarray
    keep: np.ndarray | None
    keep_hash: str | None
    dtype: str
    chunk_size: int
    progress: ProgressFn | None
    show_progress: bool
    fp: str
    s_hash: str

    @property
    def num_rows(self) -> int:
        return int(self.offsets[-1]) if self.keep is None else len(self.keep)


def layers_to_write(job: Job, directory: Path, missing: list[int], have: Sequence[int] = ()) -> list[int]:
    """Every layer not already stored (``have``; the model computes them all anyway) where the disk holds
    them; else only the ``missing`` ones asked for, said in a warning; else a ``FeatureCacheError`` saying
    what it needs, before anything is embedded."""
    stored_already = set(have)
    every = [j for j in range(job.embedder.num_layers) if j not in stored_already]
    per_layer = job.num_rows * job.embedder.dim * np.dtype(job.dtype).itemsize
    free = shutil.disk_usage(directory).free
    if per_layer * len(every) <= free * DISK_SHARE:
        return every
    what = f"{job.embedder.name}/{job.key}: {job.num_rows:,} rows × {job.embedder.dim} × {job.dtype}"
    if per_layer * len(missing) <= free * DISK_SHARE:
        need, less = gb(per_layer * len(every)), gb(per_layer * len(missing))
        log.warning(
            "%s: the %d layers not stored yet need %s, %s is free in %s; writing only the requested layers %s (%s).",
            what, len(every), need, gb(free), directory, sorted(missing), less,
        )  # fmt: skip
        return sorted(missing)
    raise FeatureCacheError(
        f"{what} needs {gb(per_layer * len(missing))} for the {len(missing)} layer{'s' * (len(missing) > 1)} "
        "asked for "
        f"({gb(per_layer)} each), but only {gb(free)} is free in {directory}. "
        + ("Ask for fewer layers (--layers), free" if len(missing) > 1 else "Free")  # one layer: it cannot be fewer
        + " some space (old entries under the cache's features/ folder can go), or point EMBPROBE_CACHE at a "
        "larger disk."
    )


def key_label(key: str) -> str:
    """A cache key as a person reads it in a progress message: "semcor-tagged-limit5000" -> "semcor-tagged,
    --limit 5000"; a data file's content hash ("file-239d7e365f31-limit500") -> "a data file, --limit 500" (the
    option as given: the first N sentences of a file, or of each set for WSD's test sets)."""
    key = re.sub(r"\bfile-[0-9a-f]{8,}", "a data file", key)
    return re.sub(r"-limit(\d+)$", r", --limit \1", key)


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def extract_to_disk(job: Job, directory: Path, layers: list[int] | None = None, kept: dict | None = None) -> dict:
    """Embed every sentence once and write ``layers`` (default all: the model computes them all anyway).
    ``kept``: the ``meta.json`` records of valid layers already in place for this same job, which the new
    ``meta.json`` lists too (a later request for another layer adds to an entry instead of replacing it)."""
    emb = job.embedder
    dim = emb.dim
    layers = list(range(emb.num_layers)) if layers is None else layers
    tmp_paths: dict[int, Path] = {}
    files: LayerFiles | None = None
    try:
        try:
            offsets = {}
            for j in layers:
                tmp_paths[j] = temp_path(directory / layer_file(j))
                header = np.lib.format.open_memmap(tmp_paths[j], mode="w+", dtype=job.dtype, shape=(job.num_rows, dim))
                offsets[j] = header.offset
                del header
                reserve(tmp_paths[j])
            files = LayerFiles(tmp_paths, offsets, dim * np.dtype(job.dtype).itemsize)
        except OSError as exc:
            raise CannotWrite(f"cannot write in {directory}: {exc}") from exc
        try:
            embed_into(job, files)
        except OSError as exc:  # the disk filled up after all, or went away
            raise FeatureCacheError(
                f"Writing the feature cache {directory} failed: {exc}; nothing was cached."
            ) from exc
        try:
            layer_meta = {}
            files.close()  # not synced: the pages reach the disk by themselves; the checksum (read through the
            # same page cache) and its check on every first open catch a file the OS lost
            with ThreadPoolExecutor(max(1, min(len(layers), (os.cpu_count() or 1) // 2))) as pool:
                sums = dict(zip(layers, pool.map(file_checksum, [tmp_paths[j] for j in layers])))  # numpy: no GIL
            for j in layers:
                layer_meta[str(j)] = {
                    "shape": [job.num_rows, dim],
                    "dtype": job.dtype,
                    "nbytes": tmp_paths[j].stat().st_size,
                    "checksum": sums[j],
                }
            # An interrupted commit leaves no meta.json, so the entry reads as absent and is rebuilt.
            (directory / META_FILE).unlink(missing_ok=True)
            for j in layers:
                final = directory / layer_file(j)
                os.replace(tmp_paths[j], final)
                remember_verified(final, layer_meta[str(j)]["checksum"])
        except OSError as exc:
            raise FeatureCacheError(f"Writing the feature cache {directory} failed: {exc}") from exc
    finally:
        if files is not None:
            files.close()
        for tmp in tmp_paths.values():
            tmp.unlink(missing_ok=True)
    meta = {
        "version": FORMAT_VERSION,
        "fingerprint": job.fp,
        "model": emb.name,
        "dataset_key": job.key,
        "sentences_hash": job.s_hash,
        "num_sentences": len(job.sentences),
        "num_words": int(job.offsets[-1]),
        "keep_hash": job.keep_hash,
        "num_rows": job.num_rows,
        "dim": dim,
        "dtype": job.dtype,
        "libraries": library_versions(emb.computed_with),
        "layers": dict(sorted({**(kept or {}), **layer_meta}.items(), key=lambda item: int(item[0]))),
    }
    try:
        write_atomically(directory / META_FILE, meta_text(meta))
    except OSError as exc:  # e.g. the disk filled up: the layers are in place, checksummed; use them
        log.warning(
            "Writing %s failed (%s): this run uses the features it computed, but the entry is not committed "
            "and will be rebuilt next time.",
            directory / META_FILE,
            exc,
        )
    return meta


def _check_block(job: Job, sentences: list[int], block) -> None:
    """The final bytes of a block, once: finite (an inf in float16 may be an overflow of a finite float32).
    On failure the first sentence holding a bad row is embedded again to say what and where."""
    if block.finite if block.finite is not None else all_finite(block.rows.numpy()):
        return
    bad = ~torch.isfinite(block.rows).all(dim=2).all(dim=0)  # (rows,) True where any layer is not finite
    first_row = int(torch.nonzero(bad)[0, 0]) if bad.any() else 0
    k = int(np.searchsorted(np.cumsum(block.counts), first_row, side="right"))
    i = sentences[int(block.sentences[k])]
    words = job.sentences[i]
    check_vectors(job.embedder.embed([words])[0].vectors, job.dtype, job.embedder.name, job.key, i, words)
    raise NonFiniteFeaturesError(
        f"{job.embedder.name} returned NaN or inf values (or values beyond the {job.dtype} range) for dataset "
        f"'{job.key}' (sentence {i}: {' '.join(words)[:60]!r}); nothing was cached."
    )


def embed_into(job: Job, sink: LayerArrays | LayerFiles) -> None:
    """Fill ``sink`` with the stored rows of every sentence: the embedder's ``embed_rows`` (blocks already in
    the storage dtype), each block checked once on its final bytes."""
    emb, sentences, lengths, offsets, keep = job.embedder, job.sentences, job.lengths, job.offsets, job.keep
    total = int(offsets[-1])
    # Sentence i's stored rows: row_start[i]:row_start[i+1]; with keep, its words keep[...] - offsets[i].
    row_start = offsets if keep is None else np.searchsorted(keep, offsets)
    log.info("Extracting %s features for %s: %d sentences, %d words.", emb.name, job.key, len(sentences), total)
    emb.check_text(sentences)  # the dataset as a whole, before any batch (a static model's unknown words)
    # Longest first: similar lengths share a chunk, and a too-long sentence fails early.
    order = np.argsort(-lengths, kind="stable")
    chunks = [order[start : start + job.chunk_size] for start in range(0, len(order), job.chunk_size)]

    def kept(idx: np.ndarray) -> list[np.ndarray] | None:
        if keep is None:
            return None
        return [keep[row_start[i] : row_start[i + 1]] - offsets[i] for i in idx]

    what = f"{emb.name}, {key_label(job.key)}"
    bar = tqdm(total=total, unit="word", desc=what, disable=not job.show_progress, mininterval=2.0)
    done, t0, torch_dtype = 0, time.perf_counter(), getattr(torch, job.dtype)
    sentences_done = 0

    def say(k: int) -> str:  # k sentences embedded so far
        rate = k / max(time.perf_counter() - t0, 1e-9)
        return f"{what}: {k:,}/{len(order):,} sentences, {rate:.0f} sentences/s, {done:,}/{total:,} words"

    if job.progress is not None:
        job.progress(0.0, say(0))
    try:
        stream = emb.embed_rows((([sentences[i] for i in idx], kept(idx)) for idx in chunks), torch_dtype)
        for c, block in stream:
            idx = chunks[c][block.sentences]
            if block.rows.shape[1]:
                _check_block(job, chunks[c], block)
                sink.write(block.rows.numpy(), row_start[idx], block.counts)
            words = int(lengths[idx].sum())
            done, sentences_done = done + words, sentences_done + len(idx)
            bar.update(words)
            if job.progress is not None:
                job.progress(done / max(total, 1), say(sentences_done))
    finally:
        bar.close()


def runs(starts: np.ndarray, counts: np.ndarray) -> list[tuple[int, int, int]]:
    """(first stored row, first and end position in the block) of each run of sentences whose stored rows
    follow each other: sentences with ``counts`` rows each, starting at ``starts``, in block order."""
    pos = np.concatenate([[0], np.cumsum(counts)])
    cut = np.flatnonzero(starts[1:] != starts[:-1] + counts[:-1]) + 1
    firsts, ends = np.concatenate([[0], cut]), np.concatenate([cut, [len(starts)]])
    return [(int(starts[a]), int(pos[a]), int(pos[b])) for a, b in zip(firsts, ends) if pos[b] > pos[a]]


class LayerArrays:
    """Layers in memory ({layer: (num_rows, dim) array}): the cache cannot be written."""

    def __init__(self, arrays: dict[int, np.ndarray]) -> None:
        self.arrays = arrays

    def write(self, rows: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> None:
        """Block ``rows`` (all layers, n, dim) of sentences whose stored rows start at ``starts``."""
        for first, a, b in runs(starts, counts):
            for j, arr in self.arrays.items():
                arr[first : first + b - a] = rows[j, a:b]


class LayerFiles:
    """Layer files (``.npy``, header written) filled with ``os.pwrite`` at each run's offset: one call per run
    of rows and layer, no page faults of a mapping, no float32 round trip (issue 33). Big blocks are written
    a layer per thread (``pwrite`` releases the GIL; one core copies ~1-3 GB/s into the page cache)."""

    PARALLEL_BYTES = 8 << 20  # a block at least this big is written by several threads

    def __init__(self, paths: dict[int, Path], data_offsets: dict[int, int], row_bytes: int) -> None:
        self.fds = {j: os.open(path, os.O_WRONLY) for j, path in paths.items()}
        self.data_offsets, self.row_bytes = data_offsets, row_bytes
        workers = min(len(self.fds), (os.cpu_count() or 1) // 2)
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="write-layer") if workers > 1 else None

    def write(self, rows: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> None:
        """As :meth:`LayerArrays.write`; an OSError (disk full) propagates."""
        spans = runs(starts, counts)

        def layer(j: int) -> None:
            fd, base = self.fds[j], self.data_offsets[j]
            for first, a, b in spans:
                data, at = memoryview(rows[j, a:b]).cast("B"), base + first * self.row_bytes
                while data:  # a regular file writes it all at once; a short write goes on where it stopped
                    n = os.pwrite(fd, data, at)
                    data, at = data[n:], at + n

        if self.pool is None or rows.nbytes < self.PARALLEL_BYTES:
            for j in self.fds:
                layer(j)
        else:
            list(self.pool.map(layer, self.fds))  # re-raises the first error

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
