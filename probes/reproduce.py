"""``python -m probes wsd|pos|mix|reproduce``: the paper's probes from the command line.

    python -m probes wsd --model minilm --layers all          # 1-NN WSD per layer + mean of layers
    python -m probes pos --model elmo-small --layers 0,1,2    # linear POS probe per layer
    python -m probes mix --model minilm                       # scalar-mix λ ablation (POS, chunking)
    python -m probes reproduce --models glove-6b-50d,minilm --out docs/results/

Every run saves a JSON result (``probes.results``) under ``--results`` (default
``<cache>/results``; ``reproduce`` uses ``--out``), which the app reads. ``reproduce`` then writes
paper-style tables (Markdown and CSV) with the paper's published numbers beside ours.
Bad requests (unknown model, layer out of range, empty slice, unusable cache) end with one
``error:`` line on stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from pathlib import Path

EXIT_USAGE = 2


# ----------------------------------------------------------------------------- helpers

def _command_line() -> str:
    return "python -m probes " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else ""


def _setup(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)


def _load(name: str):
    from models.registry import load_embedder

    emb = load_embedder(name)
    if getattr(emb, "device", None) is not None and _load.device is not None:
        emb.to(_load.device)
    return emb


_load.device = None  # set from --device


def _limit(args) -> int | None:
    from probes.errors import ProbeInputError

    if args.limit is not None and args.limit <= 0:
        raise ProbeInputError(f"--limit {args.limit} selects no sentences; use a positive number.")
    return args.limit


def _save(result: dict, out: Path) -> Path:
    from probes.results import save_result

    result = {**result, "command": _command_line()}
    return save_result(result, out)


def _print_rows(result: dict, metrics=("F1", "accuracy", "chunk_F1")) -> None:
    for r in result["rows"]:
        if r["metric"] in metrics:
            print(f"  {result['model']:<18} {r['dataset']:<22} layer {r['layer']:<14} {r['metric']:<9} {r['value']:6.2f}")


def _results_dir(args) -> Path:
    from corpora.paths import cache_dir

    return Path(args.results) if args.results else cache_dir() / "results"


# ----------------------------------------------------------------------------- commands

def cmd_wsd(args: argparse.Namespace) -> int:
    from probes.wsd import run_first_sense, run_wsd

    from probes.wsd import parse_layer_specs

    _setup(args)
    limit = _limit(args)
    emb = _load(args.model)                      # fail fast: unknown model, bad layers
    parse_layer_specs(args.layers, emb.num_layers)
    if args.semcor_limit is not None and args.semcor_limit <= 0:
        from probes.errors import ProbeInputError

        raise ProbeInputError(f"--semcor-limit {args.semcor_limit} selects no sentences; use a positive number.")
    out = _results_dir(args)
    keys = Path(args.keys) if args.keys else None
    base = run_first_sense(limit=limit, keys_dir=keys)
    _print_rows(base)
    _save(base, out)
    res = run_wsd(emb, args.layers, limit=limit, device=args.device, keys_dir=keys,
                  semcor_limit=args.semcor_limit)
    _print_rows(res)
    print(f"saved {_save(res, out)}")
    return 0


def cmd_pos(args: argparse.Namespace) -> int:
    from probes.pos import run_pos, run_pos_baseline

    from probes.wsd import parse_layer_specs

    _setup(args)
    limit = _limit(args)
    emb = _load(args.model)                      # fail fast: unknown model, bad layers
    parse_layer_specs(args.layers, emb.num_layers)
    out = _results_dir(args)
    base = run_pos_baseline(limit)
    _print_rows(base)
    _save(base, out)
    res = run_pos(emb, args.layers, limit=limit, device=args.device, seed=args.seed)
    _print_rows(res)
    print(f"saved {_save(res, out)}")
    return 0


def cmd_mix(args: argparse.Namespace) -> int:
    from probes.mix import ROWS, run_mix

    _setup(args)
    limit = _limit(args)
    rows = ROWS if args.rows == "all" else tuple(r.strip() for r in args.rows.split(";"))
    tasks = tuple(t.strip() for t in args.tasks.split(","))
    res = run_mix(_load(args.model), rows=rows, tasks=tasks, limit=limit, device=args.device, seed=args.seed,
                  epochs=args.epochs, train_limit=args.train_limit)
    _print_rows(res)
    for task, per_row in res["extra"]["mix"].items():
        for row, w in per_row.items():
            if w:
                print(f"  {task:<6} {row:<12} s = {w['s']}  γ = {w['gamma']}")
    print(f"saved {_save(res, _results_dir(args))}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from probes.errors import ProbeInputError
    from probes.mix import run_mix
    from probes.pos import run_pos, run_pos_baseline
    from probes.wsd import run_first_sense, run_wsd

    _setup(args)
    limit = _limit(args)
    out = Path(args.out)
    if args.tables_only:
        print(f"tables written to {write_tables(out / 'runs', out)}")
        return 0
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not models:
        raise ProbeInputError("--models is empty.")
    probes = [p.strip() for p in args.probes.split(",")]
    bad = [p for p in probes if p not in ("wsd", "pos", "mix")]
    if bad:
        raise ProbeInputError(f"Unknown probe(s) {bad}; choose from wsd, pos, mix.")
    embedders = {m: _load(m) for m in models}   # fail early on an unknown or broken model
    results_dir = out / "runs"
    timings = {}
    t_all = time.perf_counter()
    if "wsd" in probes:
        _save(run_first_sense(limit=limit, keys_dir=out / "keys" if args.keys else None), results_dir)
    if "pos" in probes:
        _save(run_pos_baseline(limit), results_dir)
    if "mix" in probes:
        t = time.perf_counter()
        _save(run_mix(embedders[models[0]], rows=("baseline",), limit=limit, device=args.device, seed=args.seed,
                      epochs=args.epochs, train_limit=args.train_limit), results_dir)
        timings["mix baseline (GloVe)"] = time.perf_counter() - t
    for name, emb in embedders.items():
        for probe in probes:
            t = time.perf_counter()
            print(f"== {name}: {probe}", flush=True)
            if probe == "wsd":
                res = run_wsd(emb, "all", limit=limit, device=args.device,
                              keys_dir=out / "keys" if args.keys else None, semcor_limit=args.semcor_limit)
            elif probe == "pos":
                res = run_pos(emb, "all", limit=limit, device=args.device, seed=args.seed)
            else:
                if emb.num_layers < 2:
                    print(f"   (skipped: {name} has a single layer)")
                    continue
                res = run_mix(emb, rows=("last", "all λ=1", "all λ=0.001"), limit=limit, device=args.device,
                              seed=args.seed, epochs=args.epochs, train_limit=args.train_limit)
            _print_rows(res)
            _save(res, results_dir)
            timings[f"{name} {probe}"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_all
    write_tables(results_dir, out, None, timings=timings, command=_command_line())
    print(f"tables written to {out}/ (total {timings['total']:.0f} s)")
    return 0


# ----------------------------------------------------------------------------- tables

def build_tables(results_dir: Path, models: list[str] | None = None) -> dict:
    """Paper-style tables (pandas DataFrames) from the result files under ``results_dir``."""
    import pandas as pd

    from probes import paper
    from probes.results import load_extras, load_results
    from probes.wsd import EVAL_LABELS, EVAL_SETS, PAPER_ALL

    df = load_results(results_dir)
    if df.empty:
        return {}
    if models is not None:
        keep = set(models) | {"wordnet-1st-sense", "majority-tag", "glove-6b-50d"}
        df = df[df.model.isin(keep)]
    tables = {}

    # WSD: one row per (model, layer), F1 per evaluation set; paper's Table 5 beside.
    sets = EVAL_SETS + (PAPER_ALL,)
    wsd = df[(df.probe == "wsd") & (df.metric == "F1") & (df.dataset.isin(sets))]
    if not wsd.empty:
        t = wsd.pivot_table(index=["model", "layer"], columns="dataset", values="value", aggfunc="last")
        t = t[[c for c in sets if c in t.columns]].rename(columns=EVAL_LABELS).reset_index()
        t["paper (same column as ALL w/o SE07)"] = [
            paper.fmt(paper.WSD_TABLE5["WordNet 1st Sense Baseline"]) if m == "wordnet-1st-sense"
            else "biLM L1 67.4, L2 69.0; CoVe L1 59.4, L2 64.7" for m in t["model"]]
        tables["wsd"] = t
        pos_t = df[(df.probe == "wsd") & (df.metric == "F1") & (df.dataset.str.startswith("ALL:"))]
        if not pos_t.empty:
            p = pos_t.pivot_table(index=["model", "layer"], columns="dataset", values="value", aggfunc="last")
            p.columns = [c.split(":")[1] for c in p.columns]
            tables["wsd_by_pos"] = p[[c for c in ("NOUN", "VERB", "ADJ", "ADV") if c in p.columns]].reset_index()

    pos = df[(df.probe == "pos") & (df.metric == "accuracy")]
    if not pos.empty:
        t = pos[["model", "layer", "value"]].rename(columns={"value": "accuracy (CoNLL-2000 test)"})
        tables["pos"] = t.reset_index(drop=True)

    mix = df[df.probe == "mix"]
    if not mix.empty:
        rows = []
        base = mix[mix.layer == "baseline"]
        extras = load_extras(results_dir, "mix")
        for model in [m for m in mix.model.unique() if m != "glove-6b-50d"] or ["glove-6b-50d"]:
            for task, metric in (("pos", "accuracy"), ("chunk", "chunk_F1")):
                cell = {"model": model, "task": f"CoNLL-2000 {'POS acc.' if task == 'pos' else 'chunk F1'}"}
                for col, layer in zip(paper.LAMBDA_COLUMNS, ("baseline", "last", "all λ=1", "all λ=0.001")):
                    src = base if layer == "baseline" else mix[mix.model == model]
                    v = src[(src.layer == layer) & (src.dataset == f"conll2000-test:{task}")]
                    cell[col] = paper.fmt(float(v.value.iloc[-1]), 2) if len(v) else "n/a"
                mixes = [e for e in extras if e["model"] == model and "mix" in e]
                if mixes:
                    w = mixes[-1]["mix"].get(task, {}).get("all λ=0.001") or {}
                    cell["learned s (λ=0.001)"] = ", ".join(f"{x:.2f}" for x in w.get("s", [])) or "n/a"
                    cell["γ (λ=0.001)"] = f"{w['gamma']:.2f}" if "gamma" in w else "n/a"
                rows.append(cell)
        for task, vals in paper.LAMBDA_TABLE2.items():
            rows.append({"model": "paper: ELMo (Table 2)", "task": task,
                         **{c: paper.fmt(v) for c, v in zip(paper.LAMBDA_COLUMNS, vals)}})
        tables["mix"] = pd.DataFrame(rows)

    tables["paper_wsd"] = pd.DataFrame(list(paper.WSD_TABLE5.items()), columns=["paper Table 5 (ALL)", "F1"])
    tables["paper_pos"] = pd.DataFrame(list(paper.POS_TABLE6.items()), columns=["paper Table 6 (PTB)", "accuracy"])
    return tables


TITLES = {
    "wsd": "WSD: 1-NN on SemCor sense centroids, F1 (Raganato et al. framework)",
    "wsd_by_pos": "WSD on ALL by part of speech, F1",
    "pos": "POS tagging: linear probe per layer, accuracy on CoNLL-2000 test (WSJ 20)",
    "mix": "Scalar-mix λ ablation on CoNLL-2000 (ours) and the paper's Table 2 (dev sets)",
    "paper_wsd": "Paper, Table 5: all-words fine-grained WSD F1",
    "paper_pos": "Paper, Table 6: PTB POS tagging accuracy",
}


def markdown_table(df) -> str:
    """A pipe table of ``df`` (floats with 2 decimals, missing as n/a); no extra dependency."""
    def cell(v) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return "n/a"
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def write_tables(results_dir: Path, out: Path, models: list[str] | None = None, timings: dict | None = None,
                 command: str = "") -> Path:
    """Write ``tables.md`` and one CSV per table under ``out``; returns the Markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    tables = build_tables(results_dir, models)
    lines = ["# Probe results (Peters et al. 2018, section 5)", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    for key, title in TITLES.items():
        if key not in tables:
            continue
        t = tables[key]
        t.to_csv(out / f"{key}.csv", index=False)
        lines += [f"## {title}", "", markdown_table(t), ""]
    if timings:
        lines += ["## Wall time (s)", ""] + [f"- {k}: {v:.0f}" for k, v in timings.items()] + [""]
    path = out / "tables.md"
    path.write_text("\n".join(lines))
    return path


# ----------------------------------------------------------------------------- parser

def _common(p: argparse.ArgumentParser, model: bool = True) -> None:
    if model:
        p.add_argument("--model", required=True, help="model name (python -m models list)")
        p.add_argument("--layers", default="all",
                       help="'all' (every layer + mean), 'mean', '0,1,2' or 'mix:w0,w1,...' (default all)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N sentences of each dataset")
    p.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--results", default=None, help="directory for result JSON (default <cache>/results)")
    p.add_argument("-v", "--verbose", action="store_true")


def _guard(func):
    """Run a command; a bad request prints one error line and returns exit status 2."""

    def run(args: argparse.Namespace) -> int:
        from models.base import ModelLoadError, UnknownModelError
        from corpora.paths import DataMissingError
        from probes.errors import ProbeInputError
        from probes.features import FeatureCacheError

        _load.device = args.device
        try:
            return func(args)
        except (ProbeInputError, UnknownModelError, ModelLoadError, FeatureCacheError, DataMissingError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except RuntimeError as exc:
            if "device" in str(exc).lower() or "cuda" in str(exc).lower():
                print(f"error: {exc}", file=sys.stderr)
                return EXIT_USAGE
            raise
    return run


def add_subcommands(sub) -> None:
    """Register wsd, pos, mix and reproduce on ``python -m probes``'s subparsers."""
    p = sub.add_parser("wsd", help="1-NN word sense disambiguation per layer (SemCor -> SE2..SE15, ALL)")
    _common(p)
    p.add_argument("--keys", default=None, help="also write predictions as key files (Scorer.java input) here")
    p.add_argument("--semcor-limit", type=int, default=None, help="train on the first N SemCor sentences only")
    p.set_defaults(func=_guard(cmd_wsd))

    p = sub.add_parser("pos", help="linear POS probe per layer (CoNLL-2000)")
    _common(p)
    p.set_defaults(func=_guard(cmd_pos))

    p = sub.add_parser("mix", help="scalar-mix λ ablation: POS accuracy and chunk F1 (CoNLL-2000)")
    _common(p)
    p.add_argument("--rows", default="all", help="'all' or rows separated by ';' (baseline;last;all λ=1;all λ=0.001)")
    p.add_argument("--tasks", default="pos,chunk")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--train-limit", type=int, default=None, help="train on the first N CoNLL-2000 train sentences")
    p.set_defaults(func=_guard(cmd_mix))

    p = sub.add_parser("reproduce", help="run every probe on several models and write paper-style tables")
    p.add_argument("--models", default="", help="comma-separated model names")
    p.add_argument("--train-limit", type=int, default=None,
                   help="mix: train on the first N CoNLL-2000 train sentences (cached full-split features)")
    p.add_argument("--tables-only", action="store_true", help="only rewrite the tables from OUT/runs/*.json")
    p.add_argument("--out", required=True, help="output directory (tables.md, *.csv, runs/*.json)")
    p.add_argument("--probes", default="wsd,pos,mix")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--keys", action="store_true", help="also write WSD key files under OUT/keys")
    p.add_argument("--semcor-limit", type=int, default=None, help="WSD: train on the first N SemCor sentences only")
    _common(p, model=False)
    p.set_defaults(func=_guard(cmd_reproduce))
