"""The ``sweep`` and ``extract`` commands of ``python -m probes`` (added by the program, ``probes/__main__.py``).

    python -m probes sweep --models A,B --probes wsd,pos [--seeds 0,1] [--ray local|ADDRESS] [--results DIR]
    python -m probes extract --model M --dataset semcor-tagged --shards 8 [--workers 4] [--ray local|ADDRESS]

Without ``--ray`` both run in this process (a sweep one task after another; an extraction with one
worker). Bad input ends with one ``error:`` line (``probes.cli.main``), before any work. A sweep's
task runs the probe as ``python -m probes <probe>`` does (``cluster.tasks``: ``probes.run.run_probe``).
"""

from __future__ import annotations

import argparse
import os

from cluster.datasets import DATASETS, dataset_request
from cluster.executors import InProcess, OnRay
from cluster.identity import data_content, files_missing, model_content
from cluster.plan import plan_sweep
from cluster.ray_session import connect
from cluster.resources import estimate, wants_gpu
from cluster.storage import check_store
from cluster.sweep import run_sweep
from cluster.tasks import FAULT_ENV, TaskEnv
from probes.cli import add_all_options, command_line, print_rows
from probes.errors import ProbeInputError, check_positive, check_seeds, writable_dir
from probes.progress import TerminalProgress
from probes.registry import all_probes, builtin_probe_names, check_options_heard, get_probe
from probes.results import default_results_dir


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ProbeInputError(f"{flag} {text!r}: give comma-separated integers, e.g. 0,1,2.") from None
    if not values:
        raise ProbeInputError(f"{flag} is empty.")
    return values


def _session(args: argparse.Namespace):
    if args.dashboard and args.ray != "local":  # it was ignored without a word
        raise ProbeInputError(
            "--dashboard starts the dashboard of a --ray local instance; a cluster's is reached with "
            "`ray dashboard cluster/ray-cluster.yaml` (docs/scaling.md)."
        )
    if not args.ray:
        return None
    return connect(args.ray, dashboard=args.dashboard)


def _check_compute(args: argparse.Namespace) -> None:
    """``--threads`` always; ``--device`` where the tasks run on this machine (in process, ``--ray local``): a
    cluster's workers have devices of their own."""
    from models.base import use_compute  # lazy: torch

    use_compute(args.threads, args.device if args.ray in (None, "local") else None)


def cmd_sweep(args: argparse.Namespace) -> int:
    from models import references, registry  # lazy: models.registry imports torch

    models = references.split_references(args.models)
    if not models:
        raise ProbeInputError("--models is empty.")
    specs = [get_probe(p.strip()) for p in args.probes.split(",") if p.strip()]
    if not specs:
        raise ProbeInputError("--probes is empty.")
    seeds = _ints(args.seeds, "--seeds")
    for seed in seeds:
        check_seeds(seed, flag="--seeds")
    if len(seeds) == 1 and seeds[0] > 1:  # `probes pos --seeds 3` runs three seeds; a sweep's --seeds lists them
        print(f"  --seeds {seeds[0]}: the sweep runs seed {seeds[0]} alone (a list: --seeds 0,1,2 for three seeds)")
    check_positive(args.limit, "--limit")
    check_options_heard(vars(args), specs)
    _check_compute(args)
    if args.retries < 0:
        raise ProbeInputError(f"--retries {args.retries}: give 0 or more.")
    options = {spec.name: spec.options_from(vars(args)) for spec in specs}
    out = writable_dir(args.results or default_results_dir(), "--results")
    if args.cache_url:  # its fsspec backend and the bucket, before any model is looked at
        check_store(args.cache_url)
    model_specs, contents = {m: registry.get_spec(m) for m in models}, {}
    for model, spec in model_specs.items():  # fail early on an unknown or broken model: its files, not its weights
        contents[model], note = model_content(spec)
        if files_missing(spec) and args.ray in (None, "local"):  # its tasks run here
            raise ProbeInputError(
                f"{model}: {note.split(':')[0]}; its tasks would fail after the baselines ran "
                "(python -m models list says why)."
            )
        sized = estimate(model, device=args.device).note
        for line in (note, sized if sized and sized.startswith("guessed") else None):
            if line:
                print(f"  {model}: {line}")
    try:
        data = {s.name: data_content(options[s.name], s.inputs) for s in specs}
        tasks = plan_sweep(models, [s.name for s in specs], seeds, args.limit, options, contents, model_specs, data)
    except ValueError as exc:
        raise ProbeInputError(str(exc)) from None
    ray = _session(args)
    wanting = [m for m, spec in model_specs.items() if wants_gpu(spec.contextual, args.device)]
    if note := gpu_wait_note(ray, args.ray, wanting):
        print(note)
    env = TaskEnv(
        feature_root=None,
        remote=args.cache_url,
        device=args.device,
        threads=args.threads or (1 if ray else None),
        fault=os.environ.get(FAULT_ENV) if ray else None,
    )
    executor = (
        OnRay(ray, retries=args.retries, fixed_size=args.ray == "local", gpu_memory=int(args.gpu_memory * 2**30))
        if ray
        else InProcess()
    )
    with TerminalProgress("sweep") as bar:  # tasks done/failed/remaining on stderr (when it is a terminal)
        report = run_sweep(
            tasks,
            executor,
            env,
            out,
            command_line(args.argv),
            resume=not args.no_resume,
            say=bar.write,
            report=lambda res: print_rows(res, bar.write),
            progress=bar.callback,
        )
    run = report.run
    print(
        f"sweep: {run.done} run, {report.skipped} already done (same model content), {run.retried} retried, "
        f"{len(run.failures)} failed ({report.seconds:.0f} s); results in {out}"
    )
    for f in run.failures:
        print(f"  failed: {f.task.label}: {f.error}")
    return 0 if report.ok else 1


def gpu_wait_note(ray, address: str | None, wanting: list[str]) -> str | None:
    """A line for a cluster (not ``--ray local``) that has no GPU now while ``wanting`` models ask for one: their
    tasks wait for a GPU node, which only an autoscaler adds; without this line the command printed nothing."""
    if ray is None or address == "local" or not wanting or ray.cluster_resources().get("GPU"):
        return None
    return (
        f"  note: the cluster has no GPU now; the tasks of {', '.join(wanting)} ask for one and wait until an "
        "autoscaler adds a GPU node (a cluster without one never does: Ctrl-C, then --device cpu)"
    )


def cmd_extract(args: argparse.Namespace) -> int:
    from cluster.extract import extract_sharded  # lazy: torch (keeps the sweep's driver light)
    from models.registry import get_spec  # lazy: the model zoo imports torch

    if args.shards < 1:
        raise ProbeInputError(f"--shards {args.shards}: give a positive number of shards.")
    _check_compute(args)
    if args.ray not in (None, "local") and not args.store:  # an autoscaler adds nodes after the start
        raise ProbeInputError(
            "--store: on a cluster give a store every node reaches (s3://…, gs://… or a shared folder; on a "
            "one-machine cluster a local folder); the default, this machine's cache folder, is on no other node."
        )
    if args.store:  # its backend and place, before any model loads
        check_store(args.store, "--store")
    spec = get_spec(args.model)  # an unknown model is one error line, before any data is read
    sentences, keep, key = dataset_request(args.dataset, args.limit)
    ray = _session(args)
    if note := gpu_wait_note(ray, args.ray, [args.model] if wants_gpu(spec.contextual, args.device) else []):
        print(note)
    # one GPU per actor for a model that runs on one (cluster.resources), unless this machine has none
    no_gpus = ray is None or (args.ray == "local" and not ray.cluster_resources().get("GPU"))
    gpus = 0 if no_gpus or not wants_gpu(spec.contextual, args.device) else 1
    feats, stats = extract_sharded(
        args.model,
        key,
        sentences,
        keep,
        num_shards=args.shards,
        ray=ray,
        workers=args.workers,
        store=args.store,
        device=args.device or ("cpu" if ray is not None and not gpus else None),  # no GPU it did not reserve
        threads=args.threads,
        gpus_per_worker=gpus,
        keep_shards=args.keep_shards,
    )
    print(
        f"{key}: {stats['words']:,} words in {stats['shards']} shard(s) by {stats['workers']} worker(s) "
        f"({stats['model_loads']} model load(s), {stats['seconds']:.1f} s) -> {feats.directory}"
    )
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: 'local' (this machine) or a cluster address (ray://HOST:10001, auto)",
    )
    p.add_argument("--dashboard", action="store_true", help="with --ray local: start Ray's dashboard")
    p.add_argument("--limit", type=int, default=None, help="use only the first N sentences of each dataset")
    p.add_argument("--device", default=None, help="torch device of every task (default: cuda when present)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads per task (default on Ray: 1)")


def add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run probes × models × seeds, in-process or on Ray (resumable)")
    p.add_argument("--models", required=True, help="comma-separated models (names or references)")
    p.add_argument(
        "--probes",
        default=",".join(builtin_probe_names()),
        help=f"comma-separated probes (default: {','.join(builtin_probe_names())})",
    )
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--results", default=None, help="results directory (default <cache>/results)")
    p.add_argument(
        "--cache-url",
        default=None,
        help="shared feature-cache tier (fsspec URL: s3://…, gs://…, file://…): pulled before, pushed after each task",
    )
    p.add_argument("--retries", type=int, default=2, help="re-runs of a task whose worker died (default 2)")
    p.add_argument(
        "--gpu-memory",
        type=float,
        default=80,
        help="GiB of memory of one of the cluster's GPUs, for sizing each model's GPU request (default 80: "
        "A100/H100; 48 for the L40S nodes of cluster/ray-cluster.yaml, 24 for an A10G)",
    )
    p.add_argument("--no-resume", action="store_true", help="run every task, even those already in --results")
    _common(p)
    add_all_options(p, all_probes())  # as reproduce
    p.set_defaults(func=cmd_sweep)


def add_extract(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="extract a dataset's features in shards (Ray actors) into the feature cache")
    p.add_argument("--model", required=True, help="a model name or reference")
    p.add_argument("--dataset", required=True, help=f"one of: {', '.join(DATASETS)}")
    p.add_argument("--shards", type=int, default=4, help="number of shards (default 4)")
    p.add_argument("--workers", type=int, default=2, help="Ray actors, one model load each (default 2)")
    p.add_argument(
        "--store",
        default=None,
        help="where shards go (path or fsspec URL; default the cache); "
        "a remote store also receives the committed entry",
    )
    p.add_argument("--keep-shards", action="store_true", help="keep the shard files after the commit")
    _common(p)
    p.set_defaults(func=cmd_extract)
