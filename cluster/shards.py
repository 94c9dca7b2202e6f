"""Sharded feature extraction: sentence chunks embedded by workers (one model load each), written as
shards, then committed as one ordinary feature-cache entry.

    python -m probes extract --model minilm --dataset semcor-tagged --shards 8 --ray local

Design notes:

- **Same batches as a local run.** ``features.extract`` sorts the sentences longest first and embeds
  them ``chunk_size`` at a time through the model's ``embed_rows``; a shard is a run of whole chunks of
  that same order (``plan_shards``), and a worker streams its chunks through that same ``embed_rows``.
  Every chunk is therefore embedded exactly as in a local extraction (a transformer's streamed pooling
  and cast on the device, the dataset's text judged once by ``check_text``, not chunk by chunk), and the
  vectors are the same to the bit.
- **One model load per worker.** ``ShardWorker`` loads the model in its constructor and serves any
  number of shards (a Ray actor; in-process, one object). Ray restarts a dead actor and re-runs its
  shard (``max_restarts``/``max_task_retries``); shards already written are skipped, so an
  interrupted extraction resumes. (Tests kill a worker on its first shard with ``$EMBPROBE_SWEEP_FAULT``
  set: ``ShardJob.fault``.)
- **Shards.** ``shards/<fingerprint>/<key>/<request>/shard_<i>-of-<n>.npz`` in a ``Store`` (local
  path or object storage): the stored rows of its sentences at every layer, in the storage dtype,
  plus a ``.json`` with the file's size and checksum, uploaded after the ``.npz`` (a shard without
  its ``.json`` is not done). ``<request>`` hashes everything that decides the bytes (fingerprint,
  sentences, keep, dtype, chunking).
- **Commit through the cache itself.** ``ShardedEmbedder`` looks like the model to
  ``get_features`` but serves the shards' vectors (checksums verified), in the order it asks for
  them; the cache writes, checksums and locks the entry exactly as for a local extraction, so the
  result is byte-identical and later served like any entry. Shards are deleted afterwards.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cluster.storage import Store
from cluster.tasks import FAULT_EXIT
from features import FeatureCacheError, Features, get_features, sentences_hash
from features.checks import file_checksum
from features.store import library_versions
from models.base import Embedder, SentenceEmbedding
from models.registry import load_embedder

#: sentences per ``embed`` call in ``get_features`` (its default): shards are made of whole chunks.
CHUNK_SIZE: int = inspect.signature(get_features).parameters["chunk_size"].default


def plan_shards(lengths: np.ndarray, num_shards: int, chunk_size: int = CHUNK_SIZE) -> list[list[np.ndarray]]:
    """Sentence indices per shard, as chunks in ``get_features``' order, balanced by words.

    Fewer shards than asked when there are fewer chunks than shards; never an empty shard.
    """
    if num_shards < 1:
        raise ValueError(f"--shards {num_shards}: give a positive number of shards.")
    order = np.argsort(-np.asarray(lengths), kind="stable")
    chunks = [order[i : i + chunk_size] for i in range(0, len(order), chunk_size)]
    words = np.cumsum([int(np.asarray(lengths)[c].sum()) + 1 for c in chunks])
    bounds = (
        np.searchsorted(words, words[-1] * np.arange(1, num_shards) / num_shards, side="left") + 1 if chunks else []
    )
    cuts = sorted({0, *map(int, bounds), len(chunks)})
    return [chunks[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def kept_words(keep: np.ndarray | None, offsets: np.ndarray, i: int) -> np.ndarray | None:
    """Word positions within sentence ``i`` whose rows are stored (None: all)."""
    if keep is None:
        return None
    lo, hi = np.searchsorted(keep, [offsets[i], offsets[i + 1]])
    return keep[lo:hi] - offsets[i]


@dataclass(frozen=True)
class ShardJob:
    """What every shard of one extraction shares (sent to each worker once)."""

    key: str
    sentences: list[list[str]]
    offsets: np.ndarray
    keep: np.ndarray | None
    dtype: str
    store_url: str
    prefix: str  # shard folder in the store, below its root
    fault: bool = False  # tests only: the first shard's worker dies once (FAULT_ENV)


class ShardWorker:
    """Loads the model once; ``extract`` embeds one shard and uploads it. A Ray actor or a plain object."""

    def __init__(
        self, model: str, device: str | None = None, threads: int | None = None, max_tokens: int | None = None
    ) -> None:
        if threads:
            torch.set_num_threads(threads)
        self.embedder = load_embedder(model, device)  # loaded there, not on the default device and moved
        if max_tokens and hasattr(self.embedder, "max_tokens"):
            self.embedder.max_tokens = max_tokens
        self.shards_done = 0

    def info(self) -> dict:
        emb = self.embedder
        return {
            "name": emb.name,
            "num_layers": emb.num_layers,
            "dim": emb.dim,
            "fingerprint": emb.fingerprint(),
            "stateful": bool(getattr(emb, "stateful", False)),
            "libraries": library_versions(emb.computed_with),
        }

    def check_text(self, job: ShardJob) -> None:
        """The model's whole-dataset check (``Embedder.check_text``: a static model that knows at most half of the
        words), made on one worker before any shard is embedded: the driver holds no model to make it."""
        self.embedder.check_text(job.sentences)

    def extract(self, job: ShardJob, index: int, total: int, chunks: list[np.ndarray]) -> dict:
        """Embed the shard's chunks and upload ``shard_<index>-of-<total>``; skipped when already there."""
        store, name = Store(job.store_url), f"{job.prefix}/shard_{index:05d}-of-{total:05d}"
        done = store.read_json(f"{name}.json")
        if done is not None and store.exists(f"{name}.npz"):
            return done
        if job.fault and not store.exists(f"{job.prefix}/fault"):  # a worker dying mid-shard, once
            store.put_text(f"{job.prefix}/fault", "killed")
            os._exit(FAULT_EXIT)
        emb = self.embedder
        ids = np.concatenate(chunks).astype(np.int64)
        rows_of: dict[int, torch.Tensor] = {}  # sentence -> (layers, kept words, dim), in the storage dtype
        stream = emb.embed_rows(  # the local extraction's own path (features.build): same values, same checks
            (
                (
                    [job.sentences[i] for i in chunk],
                    None if job.keep is None else [kept_words(job.keep, job.offsets, int(i)) for i in chunk],
                )
                for chunk in chunks
            ),
            getattr(torch, job.dtype),
        )
        for c, block in stream:
            # a GPU's blocks come in page-locked memory, which the local path frees block by block: a shard's worth
            # is copied out of it, not held
            rows = block.rows.clone() if block.rows.is_pinned() else block.rows
            ends = np.cumsum(block.counts)
            for k, s in enumerate(block.sentences):
                rows_of[int(chunks[c][s])] = rows[:, ends[k] - block.counts[k] : ends[k]]
        parts = [[rows_of[int(i)][j].numpy() for i in ids] for j in range(emb.num_layers)]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "shard.npz"
            np.savez(
                path,
                sentences=ids,
                **{
                    f"layer_{j}": np.concatenate(p) if p else np.zeros((0, emb.dim), job.dtype)
                    for j, p in enumerate(parts)
                },
            )
            record = {
                "index": index,
                "total": total,
                "sentences": len(ids),
                "nbytes": path.stat().st_size,
                "checksum": file_checksum(path),
                "libraries": library_versions(emb.computed_with),  # the worker's: checked by the driver at commit
            }
            store.put_file(path, f"{name}.npz")
        store.put_text(f"{name}.json", json.dumps(record))  # last: the shard is done
        self.shards_done += 1
        return record


def check_releases(model: str, workers: dict | None) -> None:
    """FeatureCacheError unless a worker computed ``model`` under this process's releases of its libraries (the
    driver records its own with the entry): checked before any shard is planned, and on every shard at commit."""
    here = library_versions(list(workers or {}))
    if workers is None or workers != here:
        differ = ", ".join(f"{k} {v} (here {here[k]})" for k, v in sorted((workers or {}).items()) if here[k] != v)
        raise FeatureCacheError(
            f"A worker computes {model} under {differ or 'unrecorded library releases'}: install the same releases "
            "here and on every worker (the feature cache records what computed its vectors)."
        )


class ShardedEmbedder:
    """Serves the shards' vectors to ``get_features`` as if it were the model (same name, shape, fingerprint)."""

    stateful = False
    embed_rows = Embedder.embed_rows  # the feature cache's path, over ``embed`` below
    # the model is in the workers: its whole-dataset check ran there before the shards (ShardWorker.check_text)
    check_text = Embedder.check_text

    def __init__(self, info: dict, job: ShardJob, records: list[dict]) -> None:
        # the entry records this process's releases of the workers' libraries: they must be every worker's own
        for worker in [info["libraries"]] + [r.get("libraries") for r in records]:
            check_releases(info["name"], worker)
        self.computed_with = tuple(info["libraries"])
        self.name, self.num_layers, self.dim, self._fp = (
            info["name"],
            info["num_layers"],
            info["dim"],
            info["fingerprint"],
        )
        self.job, self.records = job, sorted(records, key=lambda r: r["index"])
        self._shard, self._rows, self._next = -1, {}, 0
        self._queue: deque[int] = deque()

    def fingerprint(self) -> str:
        return self._fp

    def _load(self, k: int) -> None:
        rec, store = self.records[k], Store(self.job.store_url)
        name = f"{self.job.prefix}/shard_{rec['index']:05d}-of-{rec['total']:05d}.npz"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "shard.npz"
            store.get_file(name, path)
            if path.stat().st_size != rec["nbytes"] or file_checksum(path) != rec["checksum"]:
                raise FeatureCacheError(
                    f"{store.path(name)} does not match its .json (size or checksum); "
                    "delete the shard and extract again."
                )
            with np.load(path, allow_pickle=False) as z:
                layers = [z[f"layer_{j}"] for j in range(self.num_layers)]
                ids = z["sentences"]
        starts, pos = {}, 0
        for i in ids:
            words = kept_words(self.job.keep, self.job.offsets, int(i))
            n = len(self.job.sentences[i]) if words is None else len(words)
            starts[int(i)] = (pos, pos + n, words)
            pos += n
        self._shard, self._layers, self._rows, self._queue = k, layers, starts, deque(int(i) for i in ids)

    def embed(self, sentences: Sequence[Sequence[str]], with_attention: bool = False) -> list[SentenceEmbedding]:
        out = []
        for words in sentences:
            if not self._queue:
                if self._shard + 1 >= len(self.records):
                    raise FeatureCacheError(
                        f"{self.name}/{self.job.key}: more sentences asked for than the shards hold."
                    )
                self._load(self._shard + 1)
            i = self._queue.popleft()
            if list(words) != self.job.sentences[i]:
                raise FeatureCacheError(
                    f"{self.name}/{self.job.key}: the shards were planned for another order "
                    f"of sentences (sentence {i}); extract again with the same chunk size."
                )
            lo, hi, kept = self._rows[i]
            n = len(words)
            vectors = np.zeros((self.num_layers, n, self.dim), np.float32)
            for j, layer in enumerate(self._layers):
                if kept is None:
                    vectors[j] = layer[lo:hi]
                else:
                    vectors[j][kept] = layer[lo:hi]
            out.append(SentenceEmbedding(words=list(words), vectors=vectors))
        return out


def request_id(
    info: dict,
    key: str,
    sentences: list[list[str]],
    keep: np.ndarray | None,
    dtype: str,
    chunk_size: int,
    num_shards: int,
) -> str:
    """Hash of everything that decides the shards' bytes (their folder name)."""
    blob = json.dumps(
        [
            info["fingerprint"],
            info["libraries"],
            key,
            sentences_hash(sentences),
            dtype,
            chunk_size,
            num_shards,
            None if keep is None else hashlib.sha256(np.asarray(keep, np.int64).tobytes()).hexdigest(),
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def commit(
    info: dict,
    job: ShardJob,
    records: list[dict],
    chunk_size: int,
    root: Path | None,
    layers: Sequence[int] | None = None,
) -> Features:
    """Write the feature-cache entry from the shards (``get_features`` does the writing and checking)."""
    sharded = ShardedEmbedder(info, job, records)
    return get_features(
        sharded,
        job.key,
        job.sentences,
        layers,
        dtype=job.dtype,
        chunk_size=chunk_size,
        keep=job.keep,
        root=root,
        show_progress=False,
    )
