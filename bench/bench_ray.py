"""Ray's overhead on this machine: the same sweep in-process vs on local Ray, and sharded extraction
by actors (one model load per actor) vs one Ray task per shard (one model load per shard).

    python bench/bench_ray.py [--limit 200] [--semcor-limit 400] [--shards 8] [--json out.json]

Part 1, sweep: two random-weight checkpoints (``models.tiny``, BERT and GPT-2 families, 4 layers ×
256 hidden, 8,000-piece tokenizers) × the POS and WSD probes, one seed, run by ``run_sweep`` with the
``InProcess`` executor (one task after another, torch's default threads) and with ``OnRay`` on
``ray.init(num_cpus=2)`` (tasks in parallel, one thread each), each from a cold feature cache of its
own. Reports the sweep's wall time on each, Ray's start-up (``ray.init`` + first workers) separately,
and checks that both wrote the same result rows. Target: Ray ≤ 10 % slower.

Part 2, extraction: ``--shards`` shards of CoNLL-2000 train (first ``--extract-limit`` sentences) with
all-MiniLM-L6-v2 (the real model: its load is what reuse saves) — by 2 actors via
``extract_sharded`` (wall time including the actors' start: new processes, imports, one load each;
the start-up alone is measured on two throwaway actors first) vs one Ray task per shard that loads
the model itself, on worker processes already warm from part 1 (imports done). Both commit the same
cache entry (checked byte for byte). Reports wall times and model loads. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _rows(results_dir: Path) -> dict:
    out = {}
    for p in results_dir.glob("*.json"):
        d = json.loads(p.read_text())
        out[(d["model"], d["probe"], d["extra"]["sweep"]["part"])] = d["rows"]
    return out


def bench_sweep(ray, work: Path, limit: int, semcor_limit: int) -> dict:
    from cluster.executors import InProcess, OnRay
    from cluster.plan import plan_sweep
    from cluster.sweep import run_sweep
    from cluster.tasks import TaskEnv
    from models.tiny import make_tiny_checkpoint

    models = [
        str(make_tiny_checkpoint(k, work / f"bench-{k}", layers=4, hidden=256, heads=4, vocab_size=8000))
        for k in ("bert", "gpt2")
    ]
    tasks = plan_sweep(models, ["pos", "wsd"], [0], limit, {"wsd": {"semcor_limit": semcor_limit}})
    quiet = {"say": lambda m: None}
    t = time.perf_counter()
    local = run_sweep(tasks, InProcess(), TaskEnv(feature_root=str(work / "feat-local")), work / "res-local", **quiet)
    t_local = time.perf_counter() - t
    t = time.perf_counter()
    on_ray = run_sweep(
        tasks,
        OnRay(ray, fixed_size=True),
        TaskEnv(feature_root=str(work / "feat-ray"), threads=1),
        work / "res-ray",
        **quiet,
    )
    t_ray = time.perf_counter() - t
    same = _rows(work / "res-local") == _rows(work / "res-ray")
    return {
        "tasks": len(tasks),
        "in_process_s": t_local,
        "ray_s": t_ray,
        "ray_vs_in_process": t_ray / t_local - 1,
        "same_rows": same,
        "ok": local.ok and on_ray.ok,
    }


def bench_actors(ray, work: Path, model: str, limit: int, num_shards: int) -> dict:
    import numpy as np

    from cluster.datasets import dataset_request
    from cluster.extract import extract_sharded
    from cluster.shards import ShardJob, ShardWorker, commit, plan_shards, request_id
    from cluster.storage import Store

    sentences, keep, key = dataset_request("conll2000-train", limit)
    chunk = max(1, len(sentences) // num_shards)
    # An actor's start-up alone (a new process: imports + one model load), measured on two throwaway actors.
    t = time.perf_counter()
    probes = [ray.remote(ShardWorker).options(num_cpus=1).remote(model, None, 1) for _ in range(2)]
    ray.get([a.info.remote() for a in probes])
    t_startup = time.perf_counter() - t
    for a in probes:
        ray.kill(a)
    t = time.perf_counter()
    feats_a, stats = extract_sharded(
        model,
        key,
        sentences,
        keep,
        num_shards=num_shards,
        ray=ray,
        workers=2,
        root=work / "actors",
        threads=1,
        chunk_size=chunk,
    )
    t_actors = time.perf_counter() - t

    @ray.remote(num_cpus=1)
    def one_shard(job, index, total, chunks, model):
        from models.registry import unload_embedder

        unload_embedder(model)  # a worker process may have it from an earlier task
        worker = ShardWorker(model, threads=1)
        return worker.extract(job, index, total, chunks), worker.info()

    t = time.perf_counter()
    lengths = np.array([len(s) for s in sentences])
    plan = plan_shards(lengths, num_shards, chunk)
    info = ray.get(ray.remote(num_cpus=1)(lambda m: ShardWorker(m, threads=1).info()).remote(model))
    store = Store(work / "tasks")
    job = ShardJob(
        key,
        [list(s) for s in sentences],
        np.concatenate([[0], np.cumsum(lengths)]),
        None,
        "float16",
        store.url,
        f"shards/{info['fingerprint']}/{key}/{request_id(info, key, sentences, None, 'float16', chunk, len(plan))}",
    )
    ref = ray.put(job)
    out = ray.get([one_shard.remote(ref, i, len(plan), c, model) for i, c in enumerate(plan)])
    feats_b = commit(info, job, [r for r, _ in out], chunk, work / "tasks")
    t_tasks = time.perf_counter() - t
    same = all(
        (feats_a.directory / f).read_bytes() == (feats_b.directory / f).read_bytes()
        for f in ["meta.json"] + [f"layer_{j}.npy" for j in range(info["num_layers"])]
    )
    return {
        "shards": stats["shards"],
        "words": stats["words"],
        "actors_s": t_actors,
        "actor_startup_s": t_startup,
        "actor_loads": stats["model_loads"],
        "per_task_s": t_tasks,
        "per_task_loads": len(plan) + 1,
        "same_bytes": same,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=200, help="sweep: first N sentences of each dataset")
    ap.add_argument("--semcor-limit", type=int, default=400)
    ap.add_argument("--extract-limit", type=int, default=1600)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--model", default="minilm", help="part 2's model")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from cluster.ray_session import connect

    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        ray = connect("local", num_cpus=2)
        ray.get([ray.remote(num_cpus=1)(lambda: 0).remote() for _ in range(2)])
        startup = time.perf_counter() - t
        sweep = bench_sweep(ray, work, args.limit, args.semcor_limit)
        actors = bench_actors(ray, work, args.model, args.extract_limit, args.shards)
        ray.shutdown()
    out = {"ray_startup_s": startup, "sweep": sweep, "extract": actors}
    print(f"Ray start-up (ray.init + 2 workers): {startup:.1f} s")
    print(
        f"sweep ({sweep['tasks']} tasks): in-process {sweep['in_process_s']:.1f} s, Ray {sweep['ray_s']:.1f} s "
        f"({100 * sweep['ray_vs_in_process']:+.1f} %), same rows: {sweep['same_rows']}"
    )
    print(
        f"extract {actors['words']:,} words in {actors['shards']} shards: 2 actors {actors['actors_s']:.1f} s "
        f"({actors['actor_loads']} loads; an actor's start-up alone {actors['actor_startup_s']:.1f} s), "
        f"task per shard on warm workers {actors['per_task_s']:.1f} s "
        f"({actors['per_task_loads']} loads), same bytes: {actors['same_bytes']}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
