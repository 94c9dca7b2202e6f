"""``python -m probes contextuality``: Ethayarajh (2019)'s contextuality measures per layer, saved as results.

    python -m probes contextuality --model minilm                       # SemCor's first 2000 sentences
    python -m probes contextuality --model minilm,elmo-small --out docs/results/contextuality
    python -m probes contextuality --model gpt-small --words bank,play,run --min-occurrences 3
    python -m probes contextuality --model minilm --corpus my_sentences.txt   # one sentence a line

Each model's result (``probes.tasks.contextuality``) is saved under ``--results`` (default
``<cache>/results``; the app reads it), or with ``--out DIR`` under ``DIR/runs`` with ``DIR/tables.md``
(one model × layer table per measure) beside it. Hooked into ``probes.cli`` through its ``COMMANDS``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from probes.estimators.contextuality import METRICS
from probes.tasks.contextuality import DEFAULT_LIMIT, PROBE, corpus_sentences, run_contextuality
from probes.errors import ProbeInputError
from probes.results import load_results, save_result

TITLES = {
    "self_similarity_adj": "Self-similarity, adjusted for anisotropy (lower = more context-specific)",
    "intra_sentence_similarity_adj": "Intra-sentence similarity, adjusted for anisotropy",
    "explainable_variance_adj": "Maximum explainable variance, adjusted (MEV − MEV of random occurrences)",
    "anisotropy": "Anisotropy: mean cosine of random occurrence pairs",
    "self_similarity": "Self-similarity (raw)",
    "intra_sentence_similarity": "Intra-sentence similarity (raw)",
    "explainable_variance": "Maximum explainable variance (raw)",
    "mev_baseline": "MEV of random occurrence sets (size-matched baseline)",
}
assert set(TITLES) == set(METRICS)


def add_command(sub: argparse._SubParsersAction) -> None:
    from probes.cli import add_common

    p = sub.add_parser(PROBE, help="Ethayarajh (2019) contextuality per layer: self-similarity, intra-sentence "
                                   "similarity, maximum explainable variance, anisotropy-adjusted")
    p.add_argument("--model", required=True, help="one model or several, comma-separated (names or references)")
    p.add_argument("--words", default="", help="only these words (comma-separated), e.g. bank,play")
    p.add_argument("--corpus", default=None, help="a UTF-8 text file, one sentence a line (default: SemCor)")
    p.add_argument("--min-occurrences", type=int, default=5, help="sentences a word must occur in (default 5)")
    p.add_argument("--max-occurrences", type=int, default=50, help="at most this many of a word's sentences (seeded sample)")
    p.add_argument("--max-words", type=int, default=1000, help="at most this many words (seeded sample)")
    p.add_argument("--pairs", type=int, default=2000, help="random occurrence pairs for the anisotropy baseline")
    p.add_argument("--out", default=None, help="write DIR/runs/*.json and DIR/tables.md (instead of --results)")
    add_common(p, model=False)
    p.set_defaults(func=cmd_contextuality, limit=DEFAULT_LIMIT)


def cmd_contextuality(args: argparse.Namespace) -> int:
    from models.references import split_references
    from probes.cli import command_line, load, setup, writable_dir

    for flag in ("min_occurrences", "max_occurrences", "max_words", "pairs"):
        if getattr(args, flag) < 1:
            raise ProbeInputError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: give a positive number.")
    if args.min_occurrences < 2:
        raise ProbeInputError("--min-occurrences: a similarity needs a word in at least 2 sentences.")
    ctx = setup(args)
    models = split_references(args.model)
    if not models:
        raise ProbeInputError("--model is empty.")
    out = Path(args.out) if args.out else None
    runs = writable_dir(out / "runs" if out else (args.results or _default_results()), "--out" if out else "--results")
    sentences, dataset = None, None
    if args.corpus:
        dataset, sentences = corpus_sentences(args.corpus, args.limit)
    words = [w.strip() for w in args.words.split(",") if w.strip()] or None
    embedders = [load(m, args.device) for m in models]   # fail early on an unknown or broken model
    command = command_line(args.argv)
    for emb in embedders:
        res = run_contextuality(emb, ctx, sentences=sentences, dataset=dataset, words=words,
                                min_occurrences=args.min_occurrences, max_occurrences=args.max_occurrences,
                                max_words=args.max_words, pairs=args.pairs)
        print(summary(res.rows, emb.name))
        print(f"saved {save_result(res.stamped(command), runs)}")
    if out:
        print(f"tables written to {write_contextuality_tables(runs, out, command)}")
    return 0


def reproduce_contextuality(embedders, ctx, out: Path, command: str = "") -> Path:
    """``reproduce --rigor``: every model's contextuality with the defaults (SemCor's first
    ``DEFAULT_LIMIT`` sentences, or ``ctx.limit`` when smaller) into ``out/runs``; ``out/tables.md``."""
    from dataclasses import replace

    ctx = replace(ctx, limit=min(ctx.limit or DEFAULT_LIMIT, DEFAULT_LIMIT))
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for emb in embedders:
        res = run_contextuality(emb, ctx)
        print(summary(res.rows, emb.name))
        save_result(res.stamped(command), runs)
    return write_contextuality_tables(runs, out, command)


def _default_results() -> Path:
    from corpora.paths import cache_dir

    return cache_dir() / "results"


def summary(rows: list[dict], model: str) -> str:
    df = pd.DataFrame(rows)
    table = df.pivot_table(index="layer", columns="metric", values="value", aggfunc="last", sort=False)
    cols = [c for c in ("self_similarity_adj", "intra_sentence_similarity_adj", "explainable_variance_adj",
                        "anisotropy") if c in table]
    return f"{model}:\n{table[cols].to_string(float_format=lambda v: f'{v:.3f}')}"


def contextuality_tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """metric → a model × layer table (layers as numbers, then the relative depth is layer / last layer)."""
    df = df[df["probe"] == PROBE]
    out = {}
    for metric in TITLES:
        sel = df[df["metric"] == metric]
        if sel.empty:
            continue
        wide = sel.pivot_table(index=["model", "dataset"], columns="layer", values="value", aggfunc="last")
        wide = wide[sorted(wide.columns, key=lambda c: int(c) if str(c).isdigit() else 10**6)]
        out[metric] = wide.reset_index().rename_axis(columns=None)
    return out


def write_contextuality_tables(runs: Path, out: Path, command: str = "") -> Path:
    """``out/tables.md`` (+ one CSV per measure) from the contextuality results in ``runs``."""
    from probes.reporting.tables import markdown_table

    tables = contextuality_tables(load_results(runs))
    lines = ["# Contextuality per layer (Ethayarajh 2019)", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += ["Values in [−1, 1] (cosines) or [0, 1] (MEV); layer 0 is the context-independent layer. "
              "Adjusted = measure − its anisotropy baseline at that layer (probes/estimators/contextuality.py).", ""]
    for metric, table in tables.items():
        table.to_csv(out / f"{metric}.csv", index=False)
        shown = table.map(lambda v: ("—" if v != v else f"{v:.3f}") if isinstance(v, float) else v)   # NaN: no such layer
        lines += [f"## {TITLES[metric]}", "", markdown_table(shown), ""]
    path = out / "tables.md"
    path.write_text("\n".join(lines))
    return path
