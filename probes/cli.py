"""Command line of the probes package: ``python -m probes <command> ...``.

    python -m probes stats                                     # every dataset's counts
    python -m probes compare docs/results/runs results/runs    # did a number move?
    python -m probes wsd --model minilm --layers all           # one subcommand per registered probe
    python -m probes pos --model elmo-small --layers 0,1,2
    python -m probes mix --model minilm
    python -m probes reproduce --models glove-6b-50d,minilm --out docs/results/

A probe command runs the probe's baselines and the probe, prints the rows and saves each result
(``probes.results``) under ``--results`` (default ``<cache>/results``), which the app reads;
``reproduce`` writes under ``--out`` and renders the paper-style tables. Every request is checked
before any extraction; a bad one (unknown model or probe, layer out of range, empty slice, missing
data, unusable cache or output path) ends with one ``error:`` line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import sys
import time
from pathlib import Path

from corpora.errors import LabError
from corpora.paths import cache_dir
from probes.errors import ProbeInputError
from probes.layers import parse_layer_specs
from probes.registry import Option, ProbeSpec, RunContext, all_probes, builtin_probe_names, get_probe
from probes.results import ProbeResult, save_result

EXIT_USAGE = 2
PRINTED_METRICS = ("F1", "accuracy", "chunk_F1", "control_accuracy", "selectivity", "codelength_kbits", "compression",
                   "control_codelength_kbits", "control_compression")

#: Commands that are not probes (they live in their own modules): name -> "module:add_command",
#: where ``add_command(sub)`` adds its parser to the subparsers and sets ``func``. Imported only
#: when the parser is built with the probe commands.
COMMANDS: dict[str, str] = {
    "sweep": "cluster.cli:add_sweep",
    "extract": "cluster.cli:add_extract",
    "contextuality": "probes.tasks.contextuality_cli:add_command",
}


def command_line(argv: list[str]) -> str:
    return "python -m probes " + " ".join(shlex.quote(a) for a in argv)


def print_rows(res: ProbeResult) -> None:
    for r in res.rows:
        if r["metric"] in PRINTED_METRICS:
            spread = f" ± {r['std']:.2f} ({r['seeds']} seeds)" if "std" in r else ""
            print(f"  {res.model:<18} {r['dataset']:<22} layer {r['layer']:<14} {r['metric']:<9} {r['value']:6.2f}{spread}")


def writable_dir(path: str | Path, flag: str) -> Path:
    """``path`` as an output directory that exists and is writable; ProbeInputError otherwise."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ProbeInputError(f"{flag} {path} is a file; give a directory.")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProbeInputError(f"{flag} {path}: cannot create it ({exc.strerror}).") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ProbeInputError(f"{flag} {path} is not writable.")
    return path


def setup(args: argparse.Namespace) -> RunContext:
    """Logging, seeds, threads and device from the common options; the run context they define."""
    import numpy as np   # heavy: keeps numpy/torch off `python -m probes stats`
    import torch

    from models.allocator import reuse_freed_memory

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if args.threads is not None:
        if args.threads <= 0:
            raise ProbeInputError(f"--threads {args.threads}: give a positive number of CPU threads.")
        torch.set_num_threads(args.threads)
    if args.device is not None:
        try:
            device = torch.device(args.device)
        except RuntimeError as exc:
            raise ProbeInputError(f"--device {args.device}: {exc}") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ProbeInputError(f"--device {args.device}: this torch build or machine has no CUDA GPU; "
                                  "use --device cpu (see README, GPU install).")
    reuse_freed_memory()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    return RunContext(limit=args.limit, device=args.device, seed=args.seed, seeds=getattr(args, "seeds", 1))


def load(name: str, device: str | None):
    from models.registry import load_embedder   # heavy: the model zoo pulls in torch

    emb = load_embedder(name)
    if device is not None:
        emb.to(device)
    return emb


def cmd_stats(args: argparse.Namespace) -> int:
    from corpora.stats import dataset_table, format_table   # heavy: pandas + every reader

    start = time.time()
    print(format_table(dataset_table(lm=not args.no_lm)))
    print(f"\n({time.time() - start:.1f} s)")
    return 0


def cmd_probe(spec: ProbeSpec, args: argparse.Namespace) -> int:
    ctx = setup(args)
    options = spec.options_from(vars(args))
    out = writable_dir(args.results or cache_dir() / "results", "--results")
    emb = load(args.model, args.device)
    spec.check_model(emb)
    layers = parse_layer_specs(args.layers, emb.num_layers, emb.info.layer_ids) if spec.uses_layers else None
    command = command_line(args.argv)
    for base in spec.baselines(ctx, **options):
        print_rows(base)
        save_result(base.stamped(command), out)
    from probes.stats.seeds import run_with_seeds   # heavy: numpy + the intervals

    res = run_with_seeds(spec, emb, layers, ctx, **options)
    print_rows(res)
    for line in (spec.summary(res) if spec.summary else []):
        print(line)
    print(f"saved {save_result(res.stamped(command), out)}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from probes.reproduce import reproduce   # heavy: loads models
    from probes.reporting.tables import write_tables

    if args.verify:
        return cmd_verify(Path(args.out) / "runs")
    out = writable_dir(args.out, "--out")
    if args.tables_only:
        print(f"tables written to {write_tables(out / 'runs', out)}")
        return 0
    from models.references import split_references   # elmo:A,B keeps its comma

    ctx = setup(args)
    models = split_references(args.models)
    if not models:
        raise ProbeInputError("--models is empty.")
    if args.rigor:   # the token probes' control task and MDL
        args.control = args.mdl = True
    specs = [get_probe(p.strip()) for p in args.probes.split(",") if p.strip()]
    options = {spec.name: spec.options_from(vars(args)) for spec in specs}
    writable_dir(out / "runs", "--out")
    embedders = {m: load(m, args.device) for m in models}   # fail early on an unknown or broken model
    if args.rigor:
        embedders |= {m: load(m, args.device) for m in random_twins(embedders)}
    command = command_line(args.argv)
    timings = reproduce(embedders, specs, ctx, options, out, command=command, report=print_rows)
    print(f"tables written to {out}/ (total {timings['total']:.0f} s)")
    if args.rigor:
        from models.random_init import PREFIX
        from probes.tasks.contextuality_cli import reproduce_contextuality

        trained = [e for m, e in embedders.items() if not m.startswith(PREFIX)]
        print(f"contextuality tables written to {reproduce_contextuality(trained, ctx, out / 'contextuality', command)}")
    return 0


def random_twins(embedders: dict) -> list[str]:
    """``random:NAME@0`` for every contextual model of ``embedders`` (a static model has no layers to re-draw)."""
    from models.random_init import PREFIX

    return [f"{PREFIX}{m}@0" for m, e in embedders.items()
            if e.num_layers > 1 and not m.startswith(PREFIX) and f"{PREFIX}{m}@0" not in embedders]


def cmd_verify(runs: Path) -> int:
    """Exit 1 when a result in use was produced by other weights than the model on disk now."""
    from models.base import UnknownModelError
    from models.random_init import PREFIX as RANDOM, parse_random
    from models.registry import REGISTRY, load_embedder
    from probes.reporting.verify import report, verify_results

    if not runs.is_dir():
        raise ProbeInputError(f"--verify: no results folder {runs}.")

    def shipped(model: str) -> bool:
        """A model of the zoo, or the zoo's architecture with random weights (``random:NAME@SEED``)."""
        return (parse_random(model)[0] if model.startswith(RANDOM) else model) in REGISTRY

    def fingerprint_of(model: str) -> str | None:
        try:
            return load_embedder(model).fingerprint() if shipped(model) else None
        except UnknownModelError:
            return None

    checks = verify_results(runs, fingerprint_of)
    if not checks:
        raise ProbeInputError(f"--verify: no model results in {runs}.")
    table = report(checks)
    print(table.to_string(index=False))
    stale = table[~table["ok"]]
    print(f"\n{len(table) - len(stale)} of {len(table)} results in use were produced by the shipped model"
          + ("" if stale.empty else f"; stale: {', '.join(sorted(set(stale['model'])))} (re-run them)"))
    return 0 if stale.empty else 1


def cmd_compare(args: argparse.Namespace) -> int:
    from probes.reporting.result_diff import compare_results   # heavy: pandas

    models = [m.strip() for m in args.models.split(",") if m.strip()] or None
    bad, compared = compare_results(Path(args.reference), Path(args.candidate), models, args.tolerance)
    if compared == 0:
        raise ProbeInputError(f"No results to compare in {args.candidate}.")
    if not bad.empty:
        print(bad.to_string(index=False))
    print(f"{compared - len(bad)} of {compared} rows equal (tolerance {args.tolerance})")
    return 1 if len(bad) else 0


def add_common(p: argparse.ArgumentParser, model: bool = True) -> None:
    if model:
        p.add_argument("--model", required=True, help="a model: a name (python -m models list), a checkpoint folder, hf:ORG/NAME, elmo:OPTIONS,WEIGHTS or a vectors file")
        p.add_argument("--layers", default="all",
                       help="'all' (every layer + mean), 'mean', '0,1,2' or 'mix:w0,w1,...' (default all)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N sentences of each dataset")
    p.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=1,
                   help="probes that train: run seeds SEED..SEED+N-1 and report the mean ± std (default 1)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--results", default=None, help="directory for result JSON (default <cache>/results)")
    p.add_argument("-v", "--verbose", action="store_true")


def build_parser(with_probes: bool = True) -> argparse.ArgumentParser:
    """The parser; ``with_probes=False`` leaves out the probe commands (their modules import torch)."""
    parser = argparse.ArgumentParser(prog="python -m probes", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("stats", help="print a table of every dataset's counts")
    p.add_argument("--no-lm", action="store_true", help="skip the LM corpus (its first build takes about a minute)")
    p.set_defaults(func=cmd_stats)
    p = sub.add_parser("compare", help="compare two result directories row by row (exit 1 when a number moved)")
    p.add_argument("reference", help="results directory to compare against (e.g. docs/results/runs)")
    p.add_argument("candidate", help="results directory of the new run")
    p.add_argument("--models", default="", help="only these models (comma-separated)")
    p.add_argument("--tolerance", type=float, default=0.0, help="largest difference that counts as equal")
    p.set_defaults(func=cmd_compare)
    if not with_probes:
        return parser
    specs = all_probes()
    for spec in specs:
        p = sub.add_parser(spec.name, help=spec.description)
        add_common(p, model=True)
        spec.add_arguments(p)
        p.set_defaults(func=lambda args, spec=spec: cmd_probe(spec, args))
    p = sub.add_parser("reproduce", help="run every probe on several models and write paper-style tables")
    p.add_argument("--models", default="", help="comma-separated models (names or references, as --model)")
    p.add_argument("--out", required=True, help="output directory (tables.md, *.csv, runs/*.json)")
    p.add_argument("--probes", default=",".join(builtin_probe_names()),
                   help="comma-separated probes (default: those with built-in data)")
    p.add_argument("--tables-only", action="store_true", help="only rewrite the tables from OUT/runs/*.json")
    p.add_argument("--verify", action="store_true",
                   help="only check that every result in OUT/runs used by the tables was produced by the model "
                        "as it is on disk now (content fingerprint); exit 1 on a stale result")
    p.add_argument("--rigor", action="store_true",
                   help="also the rigor checks: token probes with --control --mdl, each contextual model's "
                        "random-weight twin (random:NAME@0) as rows, and contextuality per layer in OUT/contextuality")
    add_common(p, model=False)
    seen: dict[str, Option] = {}
    for spec in specs:   # every probe's options, each once (the same name means the same option)
        for opt in spec.options:
            if opt.name not in seen:
                seen[opt.name] = opt
                opt.add_to(p, help=f"{spec.name}: {opt.help}")
    p.set_defaults(func=cmd_reproduce)
    for target in COMMANDS.values():
        module, attr = target.split(":")
        getattr(importlib.import_module(module), attr)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(with_probes=argv[:1] not in (["stats"], ["compare"])).parse_args(argv)
    args.argv = argv
    try:
        return args.func(args)
    except LabError as exc:   # every request, file, model or cache the lab cannot serve; anything else is a bug
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
