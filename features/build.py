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
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from features.checks import FeatureCacheError, check_vectors, file_checksum, remember_verified, reserve, temp_path
from features.store import FORMAT_VERSION, META_FILE, atomic_write_text, layer_file, meta_text

log = logging.getLogger("features.extract")  # the cache's one logger (also ``features.checks``)

ProgressFn = Callable[[float, str], None]


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


def extract_to_disk(job: Job, directory: Path) -> dict:
    """Embed every sentence once and write all layers (the model computes them all anyway)."""
    emb = job.embedder
    num_layers, dim = emb.num_layers, emb.dim
    tmp_paths: dict[int, Path] = {}
    mmaps: dict[int, np.ndarray] = {}
    try:
        try:
            for j in range(num_layers):
                tmp_paths[j] = temp_path(directory / layer_file(j))
                mmaps[j] = np.lib.format.open_memmap(
                    tmp_paths[j], mode="w+", dtype=job.dtype, shape=(job.num_rows, dim)
                )
                reserve(tmp_paths[j])
        except OSError as exc:
            raise CannotWrite(f"cannot write in {directory}: {exc}") from exc
        embed_into(job, mmaps)
        try:
            layer_meta = {}
            for j in range(num_layers):
                mmaps.pop(j).flush()
                layer_meta[str(j)] = {
                    "shape": [job.num_rows, dim],
                    "dtype": job.dtype,
                    "nbytes": tmp_paths[j].stat().st_size,
                    "checksum": file_checksum(tmp_paths[j]),
                }
            # An interrupted commit leaves no meta.json, so the entry reads as absent and is rebuilt.
            (directory / META_FILE).unlink(missing_ok=True)
            for j in range(num_layers):
                final = directory / layer_file(j)
                os.replace(tmp_paths[j], final)
                remember_verified(final, layer_meta[str(j)]["checksum"])
        except OSError as exc:
            raise FeatureCacheError(f"Writing the feature cache {directory} failed: {exc}") from exc
    finally:
        mmaps.clear()
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
        "layers": layer_meta,
    }
    try:
        atomic_write_text(directory / META_FILE, meta_text(meta))
    except OSError as exc:  # e.g. the disk filled up: the layers are in place, checksummed; use them
        log.warning(
            "Writing %s failed (%s): this run uses the features it computed, but the entry is not committed "
            "and will be rebuilt next time.",
            directory / META_FILE,
            exc,
        )
    return meta


def embed_into(job: Job, arrays: dict[int, np.ndarray]) -> None:
    """Fill ``arrays`` ({layer: (num_rows, dim)}) with the stored rows of every sentence, checking every
    vector the embedder returns: right shape, finite in the storage dtype."""
    emb, sentences, lengths, offsets, keep = job.embedder, job.sentences, job.lengths, job.offsets, job.keep
    num_layers, dim = emb.num_layers, emb.dim
    total = int(offsets[-1])
    # Sentence i's stored rows: row_start[i]:row_start[i+1]; with keep, its words keep[...] - offsets[i].
    row_start = offsets if keep is None else np.searchsorted(keep, offsets)
    log.info("Extracting %s features for %s: %d sentences, %d words.", emb.name, job.key, len(sentences), total)
    # Longest first: similar lengths share a chunk, and a too-long sentence fails early.
    order = np.argsort(-lengths, kind="stable")
    bar = tqdm(total=total, unit="word", desc=f"{emb.name}/{job.key}", disable=not job.show_progress, mininterval=2.0)
    done, t0 = 0, time.perf_counter()

    def say(k: int) -> str:  # k sentences embedded so far
        rate = k / max(time.perf_counter() - t0, 1e-9)
        return f"{emb.name}/{job.key}: {k:,}/{len(order):,} sentences, {rate:.0f} sentences/s, {done:,}/{total:,} words"

    if job.progress is not None:
        job.progress(0.0, say(0))
    try:
        for start in range(0, len(order), job.chunk_size):
            idx = order[start : start + job.chunk_size]
            outs = emb.embed([sentences[i] for i in idx])
            for i, out in zip(idx, outs):
                n = int(lengths[i])
                if out.vectors.shape != (num_layers, n, dim):
                    raise FeatureCacheError(
                        f"{emb.name} returned vectors of shape {out.vectors.shape} for a sentence of "
                        f"{n} words; expected {(num_layers, n, dim)}."
                    )
                vectors = np.asarray(out.vectors)
                if n:
                    check_vectors(vectors, job.dtype, emb.name, job.key, int(i), sentences[i])
                lo, hi = int(row_start[i]), int(row_start[i + 1])
                if keep is None:
                    for j, arr in arrays.items():
                        arr[lo:hi] = vectors[j]
                elif hi > lo:
                    words = keep[lo:hi] - offsets[i]
                    for j, arr in arrays.items():
                        arr[lo:hi] = vectors[j][words]
                done += n
            bar.update(sum(int(lengths[i]) for i in idx))
            if job.progress is not None:
                job.progress(done / max(total, 1), say(start + len(idx)))
    finally:
        bar.close()
