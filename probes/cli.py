"""Command line of the probes package: ``python -m probes <command> ...``.

    python -m probes stats                                     # every dataset's counts
    python -m probes compare docs/results/runs results/runs    # did a number move?
    python -m probes wsd --model minilm --layers all           # one subcommand per registered probe
    python -m probes pos --model elmo-small --layers 0,1,2
    python -m probes reproduce --models glove-6b-50d,minilm --out docs/results/

A probe command is ``probes.run.run_probe``: it checks the request, runs the probe's baselines and the
probe with a progress bar on stderr (``probes.progress``; none when stderr is not a terminal or with
``--quiet``), saves each result (``probes.results``) under ``--results`` (default ``<cache>/results``),
which the app reads, and ends with the summary a person reads: one line per layer (and evaluation set)
with the score, its 95% interval, the baselines and n (``summary_table``), then the result file.
``--quiet`` prints the table alone; ``--json`` prints the model's ``ProbeResult`` as JSON, alone on
stdout (the table and the file go to stderr). Before the run (every check passed), the command prints
what it will embed and how long that should take (``probes.estimate``). ``reproduce`` (``probes.reproduce``)
writes under ``--out`` and renders the paper-style tables. A bad request (unknown model or probe, bad
option, layer out of range, empty slice, missing data, unusable cache or output path: any ``LabError``)
ends with one ``error:`` line on stderr and exit status 2, before any extraction.

The program (``python -m probes``, ``probes/__main__.py``) adds the commands of higher layers (``sweep``,
``extract`` from ``cluster.cli``) through ``main(argv, commands)``; this module imports no higher layer.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from corpora.cli_help import state_defaults
from corpora.errors import run_command
from corpora.stats import dataset_table, format_table
from models.allocator import reuse_freed_memory
from probes.errors import ProbeInputError, ResultsNotSavedError, writable_dir
from probes.estimators import RIGOR_METRICS
from probes.progress import TerminalProgress
from probes.registry import (
    Option,
    ProbeSpec,
    RunContext,
    all_probes,
    builtin_probe_names,
    check_options_heard,
    get_probe,
)
from probes.reporting.result_diff import compare_results
from probes.results import ProbeResult, default_results_dir
from probes.run import ProbeRun, load_model, run_probe
from probes.stats.seeds import CLAIM_SEEDS
from probes.stats.units import interval_text

PRINTED_METRICS = ("F1", "chunk_F1", *RIGOR_METRICS)
#: ``add_command(subparsers)``: adds one command's parser and sets its ``func`` (``probes/__main__.py``).
AddCommand = Callable[[argparse._SubParsersAction], None]


def command_line(argv: list[str]) -> str:
    return "python -m probes " + " ".join(shlex.quote(a) for a in argv)


def print_rows(res: ProbeResult, say: Callable[[str], None] = print) -> None:
    """One line per row of ``PRINTED_METRICS`` (``reproduce`` and ``sweep`` as results arrive), then its warning."""
    for r in res.rows:
        if r["metric"] in PRINTED_METRICS:
            spread = f" ± {r['std']:.2f} ({r['seeds']} seeds)" if "std" in r else ""
            value = "missing" if r["value"] is None else f"{r['value']:6.2f}"  # a row marked missing: no number
            say(f"  {res.model:<18} {r['dataset']:<22} layer {r['layer']:<14} {r['metric']:<9} {value}{spread}")
    if warning := res.extra.get("warning"):
        say(f"  warning: {res.model}: {warning}")


def summary_table(spec: ProbeSpec, run: ProbeRun) -> pd.DataFrame:
    """The summary of a probe command: one row per layer and shown (evaluation set, metric).

    Metrics: those of ``PRINTED_METRICS`` the result has (else the first of the probe's chart metrics);
    per metric, the probe's first chart evaluation set that has it (all sets when the probe names
    none); never a breakdown category (WSD's "ALL-noSE07:NOUN"). Columns: score (± std over seeds), the 95%
    interval, each baseline's score on the same set and metric, n, and "unit"/"clusters" where the
    rows have them (what the interval resamples and how many of them).
    """
    rows = [r for r in run.result.rows if not (spec.chart.breakdown and r["dataset"].startswith(spec.chart.breakdown))]
    present = list(dict.fromkeys(r["metric"] for r in rows))
    metrics = [m for m in PRINTED_METRICS if m in present] or [m for m in spec.chart.metrics if m in present][:1]
    shown = set()
    for m in metrics:
        sets = list(dict.fromkeys(r["dataset"] for r in rows if r["metric"] == m))
        first = [d for d in spec.chart.datasets if d in sets][:1]
        shown |= {(d, m) for d in (first or sets)}
    base = {(b.model, r["dataset"], r["metric"]): r["value"] for b in run.baselines for r in b.rows}
    table = []
    for r in (r for r in rows if (r["dataset"], r["metric"]) in shown):
        line = {"layer": r["layer"], "dataset": r["dataset"], "metric": r["metric"]}
        # no value: nothing to score (a structural metric of too-short sentences); no interval: one document or
        # sentence, which resampling cannot vary (``probes.stats.units.over_text`` says so in "clusters")
        value = "n/a" if r["value"] is None else f"{r['value']:.2f}"
        line["score"] = value + (f" ± {r['std']:.2f} ({r['seeds']} seeds)" if "std" in r else "")
        line["95% interval"] = interval_text(r.get("lo"), r.get("hi"))
        for b in run.baselines:
            key = (b.model, r["dataset"], r["metric"])  # a baseline row marked missing has no number
            line[b.model] = "-" if key not in base else "missing" if base[key] is None else f"{base[key]:.2f}"
        line["n"] = r.get("n", "")
        for key in ("unit", "clusters"):
            if key in r:
                line[key] = r[key]
        table.append(line)
    return pd.DataFrame(table).fillna("-")


def print_summary(spec: ProbeSpec, run: ProbeRun, file=None) -> None:
    """The summary table (``summary_table``) as text, or a line saying the result has no rows to show."""
    table = summary_table(spec, run)
    print("(no rows to summarise)" if table.empty else table.to_string(index=False), file=file)


def setup(args: argparse.Namespace) -> None:
    """Logging, threads and device from the common options (the seeds: ``run_probe``)."""
    from models.base import use_compute  # lazy: torch (keeps `python -m probes stats` light)

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    use_compute(args.threads, args.device)
    reuse_freed_memory()


def run_options(args: argparse.Namespace) -> dict:
    """``run_probe``'s keywords from the common options."""
    return {"limit": args.limit, "seed": args.seed, "seeds": args.seeds, "device": args.device}


def cmd_stats(args: argparse.Namespace) -> int:
    start, talk = time.time(), lambda name: print(f"reading {name} …", file=sys.stderr, flush=True)  # first: ~1 min
    print(format_table(dataset_table(lm=not args.no_lm, reading=talk)))
    print(f"\n({time.time() - start:.1f} s)")
    return 0


def cmd_probe(spec: ProbeSpec, args: argparse.Namespace) -> int:
    setup(args)
    talk = sys.stderr if args.json else sys.stdout  # what a person reads; stdout is the JSON's alone
    unsaved = None
    with TerminalProgress(f"{spec.name} {args.model}", quiet=args.quiet) as bar:
        try:
            run = run_probe(
                spec,
                args.model,
                layers=args.layers,
                options=vars(args),
                **run_options(args),
                results_dir=args.results or default_results_dir(),
                command=command_line(args.argv),
                progress=bar.callback,
                show_progress=False,
                before=None if args.quiet else lambda emb: bar.write(estimate_line(spec, emb, args), file=talk),
            )
        except ResultsNotSavedError as exc:  # the numbers are printed below, then the error
            run, unsaved = exc.run, exc
    for warning in dict.fromkeys([w for res in run.results if (w := res.extra.get("warning"))] + run.notes):
        print(f"warning: {warning}", file=sys.stderr)  # each once
    if args.json:
        print(json.dumps(run.result.to_json(), ensure_ascii=False, default=float))
    if args.quiet:
        if not args.json:
            print_summary(spec, run)
        if unsaved is not None:
            raise unsaved
        return 0
    for line in spec.summary(run.result) if spec.summary else []:
        print(line, file=talk)
    print_summary(spec, run, file=talk)
    if unsaved is not None:
        raise unsaved
    print(f"saved {run.saved[-1]}", file=talk)
    return 0


def estimate_line(spec: ProbeSpec, embedder, args: argparse.Namespace) -> str:
    """The line printed before a probe run: what it embeds and how long it should take (``probes.estimate``)."""
    from probes.estimate import estimate_run  # lazy: torch (the warm-up; `python -m probes stats` stays light)

    est = estimate_run(spec, embedder, layers=args.layers, limit=args.limit, options=vars(args), device=args.device)
    return "estimate: " + (est.text() if est is not None else f"{spec.name} reads its data when it runs (no estimate)")


def cmd_reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from probes import reproduce  # lazy: the tables and the model zoo import torch

    out = Path(args.out).expanduser()  # as writable_dir expands it: the tables are read where the runs went
    if args.verify or args.tables_only:  # they read saved results: an option of a run would go unheard
        given = [name for name in reproduce.RUN_ONLY if getattr(args, name) != parser.get_default(name)]
        reproduce.refuse_run_options(
            given, "--verify checks" if args.verify else "--tables-only builds the tables from"
        )
    reproduce.refuse_results_folder(args.results, args.tables_only)
    if args.verify:
        return 0 if reproduce.verify(out / "runs") else 1
    if args.tables_only:
        reproduce.results_folder(out, args.results)  # a --results folder that is not there: before OUT is made
        writable_dir(out, "--out")
        for path in reproduce.write_reports(out, args.results):
            print(f"tables written to {path}")
        return 0
    setup(args)
    RunContext(limit=args.limit, seed=args.seed, seeds=args.seeds or 1)  # checks them before any folder is made
    models = reproduce.split_references(args.models)
    if not models:  # the obvious default: every model of the built-in zoo that is usable here
        models = reproduce.zoo_models()
        if not models:
            raise ProbeInputError(
                "No --models given and no model of the built-in zoo is usable here (python -m models list says why)."
            )
        print(f"reproducing the built-in zoo: {', '.join(models)} (choose others with --models)")
    specs = [get_probe(p.strip()) for p in args.probes.split(",") if p.strip()]
    check_options_heard(vars(args), specs)  # before --rigor sets the token probes' own
    if args.rigor:  # the token probes' control task and MDL
        args.control = args.mdl = True
    for spec in specs:  # every probe's options, before any model is loaded
        spec.options_from(vars(args))
    embedders = {m: load_model(m, args.device) for m in models}  # fail early on an unknown or broken model
    if args.rigor:
        embedders |= {m: load_model(m, args.device) for m in reproduce.random_twins(embedders)}
    writable_dir(out / "runs", "--out")
    command = command_line(args.argv)
    with TerminalProgress("reproduce", quiet=args.quiet) as bar:  # model i/N, probe j/M and each run's steps
        timings = reproduce.reproduce(
            embedders,
            specs,
            out,
            options=vars(args),
            rigor=args.rigor,
            command=command,
            report=lambda res: print_rows(res, bar.write),
            say=bar.write,
            progress=bar.callback,
            show_progress=False,
            **run_options(args),
        )
    paper = any(s.report is None for s in specs)  # a probe with its own report said where above
    print(f"{f'tables written to {out}/' if paper else 'done'} (total {timings['total']:.0f} s)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    models = [m.strip() for m in args.models.split(",") if m.strip()] or None
    bad, compared = compare_results(Path(args.reference), Path(args.candidate), models, args.tolerance)
    if compared == 0:
        raise ProbeInputError(f"No results to compare in {args.candidate}.")
    if not bad.empty:
        print(bad.to_string(index=False))
    print(f"{compared - len(bad)} of {compared} rows equal (tolerance {args.tolerance})")
    return 1 if len(bad) else 0


def add_common(p: argparse.ArgumentParser, model: bool = True, seeds: int | None = 1) -> None:
    """The options every probe command shares; ``seeds``: the default of ``--seeds`` (``reproduce``, whose tables
    test claims: None, i.e. ``CLAIM_SEEDS`` for a probe that trains, 1 for an analysis: ``ProbeSpec.trains``)."""
    if model:
        p.add_argument(
            "--model",
            required=True,
            help="a model: a name (python -m models list), a checkpoint folder, "
            "hf:ORG/NAME, elmo:OPTIONS,WEIGHTS or a vectors file",
        )
        p.add_argument(
            "--layers",
            default=None,
            help="'all' (every layer + mean), 'mean', '0,1,2' or 'mix:w0,w1,...' (default all)",
        )
    p.add_argument("--limit", type=int, default=None, help="use only the first N sentences of each dataset")
    p.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the probe's training and sampling")
    p.add_argument(
        "--seeds",
        type=int,
        default=seeds,
        help="probes that train: run seeds SEED..SEED+N-1 and report the mean ± std (default "
        + (f"{seeds})" if seeds else f"{CLAIM_SEEDS}; analyses such as contextuality and CKA: 1)"),
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--results", help="directory of result JSON (default <cache>/results; reproduce: --tables-only's)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or estimate: the summary table alone")


def add_all_options(p: argparse.ArgumentParser, specs: Sequence[ProbeSpec]) -> None:
    """Every probe's options, each once: ``reproduce``, ``sweep``. An option several probes declare is one flag whose
    help gives each probe's meaning (``--train``: each probe's training file), grouped where they say the same; one
    that means another thing in another probe has its own flag (``--structural-rank``: ``Option.own_flag``)."""
    first: dict[str, Option] = {}
    helps: dict[str, dict[str, list[str]]] = {}  # option -> its help -> the probes that give it
    for spec in specs:
        for opt in map(spec.combined_option, spec.options):
            first.setdefault(opt.name, opt)
            helps.setdefault(opt.name, {}).setdefault(opt.help or "", []).append(spec.name)
    for name, opt in first.items():
        opt.add_to(p, help="; ".join(f"{', '.join(who)}: {text}" for text, who in helps[name].items()))


def build_parser(with_probes: bool = True, commands: Sequence[AddCommand] = ()) -> argparse.ArgumentParser:
    """The parser; ``with_probes=False`` leaves out the probe commands (their modules import torch) and
    ``commands``; ``commands`` add further commands (``probes/__main__.py``: sweep, extract)."""
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
        p.add_argument("--json", action="store_true", help="print the result as JSON on stdout (notes go to stderr)")
        spec.add_arguments(p)
        p.set_defaults(func=lambda args, spec=spec: cmd_probe(spec, args))
    p = sub.add_parser("reproduce", help="run every probe on several models and write paper-style tables")
    p.add_argument(
        "--models",
        default="",
        help="comma-separated models (names or references, as --model; default: every usable model of the zoo)",
    )
    p.add_argument("--out", required=True, help="output directory (tables.md, *.csv, runs/*.json)")
    p.add_argument(
        "--probes",
        default=",".join(builtin_probe_names()),
        help=f"comma-separated probes (default: {','.join(builtin_probe_names())})",
    )
    p.add_argument(
        "--tables-only",
        action="store_true",
        help="only rewrite the tables from saved results: --results DIR, else OUT/runs, else <cache>/results",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="only check that every result in OUT/runs used by the tables was produced by the model "
        "as it is on disk now (content fingerprint); exit 1 on a stale result",
    )
    p.add_argument(
        "--rigor",
        action="store_true",
        help="also the rigor checks: token probes with --control --mdl, each contextual model's "
        "random-weight twin (random:NAME@0) as rows, and contextuality per layer in OUT/contextuality",
    )
    add_common(p, model=False, seeds=None)
    add_all_options(p, specs)
    p.set_defaults(func=lambda args, parser=p: cmd_reproduce(args, parser))
    for add in commands:
        add(sub)
    return parser


def main(argv: list[str] | None = None, commands: Sequence[AddCommand] = ()) -> int:
    """Run one command; every ``LabError`` is one ``error:`` line and exit status 2, Ctrl-C one line and 130."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = state_defaults(build_parser(argv[:1] not in (["stats"], ["compare"]), commands)).parse_args(argv)
    args.argv = argv
    return run_command(
        lambda: args.func(args),
        "runs saved before it are kept; the one under way saved nothing (features are kept only whole; a sweep "
        "resumes after its finished tasks, an extract after its finished shards): run the command again.",
    )
