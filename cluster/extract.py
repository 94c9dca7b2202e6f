"""Driving a sharded extraction: workers (Ray actors or one in-process object), shards, commit.

    feats, stats = extract_sharded("minilm", "semcor-tagged", sentences, keep, num_shards=8, ray=ray, workers=4)

The shards go to ``store`` (default: the local cache root, ``<cache>/shards/…``); with a remote store
the committed entry is also published there (``cluster.storage.push_entry``) for other nodes to pull.
Ray actors are restarted when their process dies and the shard re-run (``max_restarts``,
``max_task_retries``); ``ray.util.ActorPool`` hands each free actor the next shard.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cluster.shards import CHUNK_SIZE, ShardJob, ShardWorker, check_releases, commit, plan_shards, request_id
from cluster.storage import Store, push_entry
from cluster.tasks import FAULT_ENV
from corpora.paths import cache_dir
from features import Features
from probes.errors import ProbeInputError


def extract_sharded(
    model: str,
    key: str,
    sentences: Sequence[Sequence[str]],
    keep: np.ndarray | None = None,
    *,
    num_shards: int,
    ray=None,
    workers: int = 1,
    store: str | None = None,
    root: Path | None = None,
    dtype: str = "float16",
    chunk_size: int = CHUNK_SIZE,
    device: str | None = None,
    threads: int | None = None,
    gpus_per_worker: float = 0,
    keep_shards: bool = False,
) -> tuple[Features, dict]:
    """Extract ``sentences`` with ``model`` in shards and commit them as the cache entry ``key``.

    Returns the entry's Features (as ``get_features`` returns them) and stats: shards, workers,
    model_loads (one per worker; a restarted actor loads once more), words, seconds, fingerprint.
    """
    if workers < 1:
        raise ProbeInputError(f"--workers {workers}: give a positive number.")
    t0 = time.perf_counter()
    sentences = [list(map(str, s)) for s in sentences]
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    plan = plan_shards(lengths, num_shards, chunk_size)
    n_workers = min(workers, len(plan)) if ray is not None else 1
    if ray is None:
        pool = [ShardWorker(model, device, threads)]
        info = pool[0].info()
    else:
        actor = ray.remote(ShardWorker).options(
            num_cpus=threads or 1, num_gpus=gpus_per_worker, max_restarts=2, max_task_retries=2
        )
        pool = [actor.remote(model, device, threads) for _ in range(n_workers)]
        info = ray.get(pool[0].info.remote())
    if info["stateful"]:
        raise ProbeInputError(f"{info['name']} is a stateful ELMo: its vectors depend on the batch; not shardable.")
    check_releases(info["name"], info["libraries"])  # before any shard is computed, not at the commit after them
    store_obj = Store(store or (root or cache_dir()))
    rid = request_id(info, key, sentences, keep, dtype, chunk_size, len(plan))
    job = ShardJob(
        key,
        sentences,
        offsets,
        None if keep is None else np.asarray(keep, np.int64),
        dtype,
        store_obj.url,
        f"shards/{info['fingerprint']}/{key}/{rid}",
        fault=ray is not None and bool(os.environ.get(FAULT_ENV)),
    )
    if ray is None:
        pool[0].check_text(job)
        records = [pool[0].extract(job, i, len(plan), chunks) for i, chunks in enumerate(plan)]
    else:
        job_ref = ray.put(job)
        ray.get(pool[0].check_text.remote(job_ref))
        records = list(
            ray.util.ActorPool(pool).map_unordered(
                lambda a, item: a.extract.remote(job_ref, item[0], len(plan), item[1]), list(enumerate(plan))
            )
        )
        for a in pool:  # free their CPUs / GPUs now, not when the handles are collected
            ray.kill(a)
    feats = commit(info, job, records, chunk_size, root)
    if store is not None and feats.directory is not None:  # a no-op when the store is the cache itself
        push_entry(store_obj, feats.directory)
    if not keep_shards:
        store_obj.fs.rm(store_obj.path(job.prefix), recursive=True)
        store_obj.drop_empty_folders(posixpath.dirname(job.prefix))
    return feats, {
        "shards": len(plan),
        "workers": n_workers,
        "model_loads": n_workers,
        "words": int(offsets[-1]),
        "seconds": time.perf_counter() - t0,
        "fingerprint": info["fingerprint"],
    }
