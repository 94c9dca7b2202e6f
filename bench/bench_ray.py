"""Ray's overhead on this machine: its fixed start-up and per-task cost beside in-process, the same sweep
in-process vs on local Ray, and sharded extraction by actors (one model load per actor) vs one Ray task
per shard (one model load per shard).

    python bench/bench_ray.py [--parts overhead,sweep,extract] [--limit 200] [--semcor-limit 400]
                              [--shards 8] [--overhead-tasks 4,16] [--repeats 3] [--json out.json]

Start-up (always): ``ray.init(num_cpus=2)``, then the first actor ready (a ``ModelWorker``, the sweep's
actor class, created and answering a no-op call: a new process and its imports, no model yet).

Part 0, overhead: one tiny checkpoint (``models.tiny`` BERT, 2 layers × 32) × POS (``--overhead-limit``
sentences, features cached beforehand) × N seeds = N tasks of one model, run by ``run_sweep`` with
``InProcess`` and with ``OnRay`` (one actor: the tasks run one after another, as in-process), both with
one torch thread, for each N of ``--overhead-tasks``, ``--repeats`` times, alternating; each run loads
the model once (in this process, or in its new actor). The tasks run one after another, so each result
reaches the driver one task's work (its payload's seconds, inside ``run_task``) after the one before,
plus the runner's cost: Ray's per-task overhead is the median of that cost over all tasks but each run's
first, minus in-process's (scheduling, (de)serialisation, the driver's bookkeeping; both save results);
its fixed cost is the time to a run's first result, minus in-process's (the actor's start: a process,
its imports, torch's and the model library's in its first task; both load the model). A straight line
through the median wall times over N is reported beside, as a check. Also: the round trip of a no-op
call to a warm actor (Ray's floor per call).

Part 1, sweep: two random-weight checkpoints (``models.tiny``, BERT and GPT-2 families, 4 layers ×
256 hidden, 8,000-piece tokenizers) × the POS and WSD probes, one seed, run by ``run_sweep`` with the
``InProcess`` executor (one task after another, torch's default threads) and with ``OnRay`` on
``ray.init(num_cpus=2)`` (tasks in parallel, one thread each), each from a cold feature cache of its
own. Reports the sweep's wall time on each (Ray's start-up is measured before, separately),
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

from corpora.errors import run_command


def _rows(results_dir: Path) -> dict:
    """Each sweep task's rows by (model, probe, task, part); the seeds a sweep merges into one result
    (``extra["sweep_seeds"]``, no ``"sweep"``) are made from those rows and left out."""
    out = {}
    for p in results_dir.glob("*.json"):
        d = json.loads(p.read_text())
        if "sweep" in d.get("extra", {}):
            out[(d["model"], d["probe"], d["extra"]["sweep"]["task"], d["extra"]["sweep"]["part"])] = d["rows"]
    return out


class _Timed:
    """An executor as it is, recording when each task's result reached the driver and the task's own
    seconds (its payload's, inside ``run_task``)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.ends, self.seconds = inner, inner.name, [], []

    def run(self, tasks, env, command, on_done, say):
        def done(task, payload) -> None:
            self.ends.append(time.perf_counter())
            self.seconds.append(payload["seconds"])
            on_done(task, payload)

        self.start = time.perf_counter()
        return self.inner.run(tasks, env, command, done, say)

    def costs(self) -> tuple[float, float, list[float]]:
        """(seconds to the first result, the first task's own seconds, what each later task cost beyond its
        own work): with the tasks one after another, a result arrives one task's work after the one
        before, plus the runner's cost."""
        later = [b - a - w for a, b, w in zip(self.ends, self.ends[1:], self.seconds[1:])]
        return self.ends[0] - self.start, self.seconds[0], later


def bench_overhead(ray, work: Path, actor, ns: list[int], repeats: int, limit: int, calls: int = 200) -> dict:
    """Ray's per-call floor on a warm actor, then fixed and per-task cost of N tasks of one model through
    ``run_sweep`` with ``InProcess`` vs ``OnRay`` (module notes, part 0)."""
    import numpy as np

    from cluster.executors import InProcess, OnRay
    from cluster.plan import plan_sweep
    from cluster.sweep import run_sweep
    from cluster.tasks import TaskEnv
    from models.registry import unload_embedder
    from models.tiny import make_tiny_checkpoint

    t = time.perf_counter()
    for _ in range(calls):
        ray.get(actor.evict.remote(TaskEnv()))  # a no-op without a store: one round trip
    noop_ms = (time.perf_counter() - t) / calls * 1000
    model = str(make_tiny_checkpoint("bert", work / "overhead-bert", layers=2, hidden=32, heads=2))
    env = TaskEnv(feature_root=str(work / "feat-overhead"), device="cpu", threads=1)
    quiet = {"say": lambda m: None, "resume": False}
    warm = run_sweep(plan_sweep([model], ["pos"], [0], limit, {})[1:], InProcess(), env, work / "warm", **quiet)
    assert warm.ok, "the warm-up task failed"  # the features cached: every run below reads them
    runs = {"in_process": {"wall": {}, "first": [], "first_work": [], "per_task": [], "work": []}}
    runs["ray"] = {k: type(v)() for k, v in runs["in_process"].items()}
    same = True
    for r in range(repeats):
        for n in ns:
            tasks = plan_sweep([model], ["pos"], list(range(n)), limit, {})[1:]  # the model's tasks only
            rows = {}
            for name, executor in (("in_process", InProcess()), ("ray", OnRay(ray, fixed_size=True))):
                unload_embedder(model)  # each run loads the model once, in this process or in its actor
                timed, out = _Timed(executor), work / f"res-{name}-{n}-{r}"
                report = run_sweep(tasks, timed, env, out, **quiet)
                wall = time.perf_counter() - timed.start
                assert report.ok and report.run.done == n, f"{name}: {report.run.failures}"
                first, first_work, per_task = timed.costs()
                runs[name]["wall"].setdefault(n, []).append(wall)
                runs[name]["first"].append(first)
                runs[name]["first_work"].append(first_work)
                runs[name]["per_task"] += per_task
                runs[name]["work"] += timed.seconds[1:]
                rows[name] = _rows(out)
            same = same and rows["in_process"] == rows["ray"]
    out: dict = {"noop_call_ms": noop_ms, "ns": ns, "repeats": repeats, "limit": limit, "same_rows": same}
    for name, m in runs.items():
        walls = [float(np.median(m["wall"][n])) for n in ns]
        per, fixed = np.polyfit(np.array(ns, float), np.array(walls), 1)
        out[name] = {
            "wall_s": walls,  # medians per N
            "wall_fit_fixed_s": float(fixed),
            "wall_fit_per_task_s": float(per),
            "first_result_s": float(np.median(m["first"])),  # the run's start to its first result
            "first_result_s_all": m["first"],
            "first_task_s": float(np.median(m["first_work"])),  # of which the first task's own (the model load)
            "per_task_ms": 1000 * float(np.median(m["per_task"])),  # beyond each later task's own work
            "per_task_ms_p10_p90": [1000 * float(q) for q in np.percentile(m["per_task"], [10, 90])],
            "task_work_ms": 1000 * float(np.median(m["work"])),
        }
    out["ray_fixed_s"] = out["ray"]["first_result_s"] - out["in_process"]["first_result_s"]
    out["ray_per_task_ms"] = out["ray"]["per_task_ms"] - out["in_process"]["per_task_ms"]
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
    ap.add_argument("--parts", default="overhead,sweep,extract", help="comma-separated: overhead, sweep, extract")
    ap.add_argument("--limit", type=int, default=200, help="sweep: first N sentences of each dataset")
    ap.add_argument("--semcor-limit", type=int, default=400)
    ap.add_argument("--extract-limit", type=int, default=1600)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--model", default="minilm", help="part 2's model")
    ap.add_argument("--overhead-tasks", default="4,16", help="overhead: the N of tasks per run (two or more)")
    ap.add_argument("--overhead-limit", type=int, default=20, help="overhead: POS sentences per task")
    ap.add_argument("--repeats", type=int, default=3, help="overhead: runs per N and runner (medians)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts or parts - {"overhead", "sweep", "extract"}:
        ap.error(f"--parts {args.parts!r}: choose among overhead, sweep, extract")
    ns = [int(n) for n in args.overhead_tasks.split(",")]
    if len(set(ns)) < 2 or min(ns) < 1:
        ap.error("--overhead-tasks: two or more different positive numbers, e.g. 4,16")
    from cluster.executors import ModelWorker
    from cluster.ray_session import connect
    from cluster.tasks import TaskEnv

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        ray = connect("local", num_cpus=2)
        out["ray_init_s"] = time.perf_counter() - t
        t = time.perf_counter()
        actor = ray.remote(ModelWorker).options(num_cpus=1).remote()
        ray.get(actor.evict.remote(TaskEnv()))
        out["first_actor_s"] = time.perf_counter() - t
        print(f"Ray start-up: ray.init {out['ray_init_s']:.2f} s, then first actor ready {out['first_actor_s']:.2f} s")
        if "overhead" in parts:
            o = out["overhead"] = bench_overhead(ray, work, actor, ns, args.repeats, args.overhead_limit)
            print(f"no-op call to a warm actor: {o['noop_call_ms']:.2f} ms")
            for name in ("in_process", "ray"):
                r, walls = o[name], ", ".join(f"{w:.2f}" for w in o[name]["wall_s"])
                print(
                    f"{name}: first result after {r['first_result_s']:.2f} s (the first task's own "
                    f"{r['first_task_s']:.2f} s); each later task "
                    f"{r['per_task_ms']:.1f} ms beyond its own work ({r['task_work_ms']:.0f} ms); "
                    f"wall {walls} s for {ns} tasks (fit: {r['wall_fit_fixed_s']:.2f} s "
                    f"+ {1000 * r['wall_fit_per_task_s']:.0f} ms/task)"
                )
            print(
                f"Ray's cost beside in-process: {o['ray_fixed_s']:.2f} s per model (a new actor: process, imports, "
                f"model load), "
                f"{o['ray_per_task_ms']:.1f} ms per task; same rows: {o['same_rows']}"
            )
        ray.kill(actor)
        if "sweep" in parts:
            sweep = out["sweep"] = bench_sweep(ray, work, args.limit, args.semcor_limit)
            print(
                f"sweep ({sweep['tasks']} tasks): in-process {sweep['in_process_s']:.1f} s, "
                f"Ray {sweep['ray_s']:.1f} s ({100 * sweep['ray_vs_in_process']:+.1f} %), "
                f"same rows: {sweep['same_rows']}"
            )
        if "extract" in parts:
            actors = out["extract"] = bench_actors(ray, work, args.model, args.extract_limit, args.shards)
            print(
                f"extract {actors['words']:,} words in {actors['shards']} shards: 2 actors "
                f"{actors['actors_s']:.1f} s ({actors['actor_loads']} loads; an actor's start-up alone "
                f"{actors['actor_startup_s']:.1f} s), task per shard on warm workers {actors['per_task_s']:.1f} s "
                f"({actors['per_task_loads']} loads), same bytes: {actors['same_bytes']}"
            )
        ray.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
