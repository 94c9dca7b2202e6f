"""Paper-style tables from saved results: each registered probe builds its own, this module collects them.

``build_tables`` is what ``python -m probes reproduce`` writes to ``docs/results/`` and what the app's
Reproduce page shows, so the two never disagree.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from probes.reporting import paper
from probes.registry import all_probes
from probes.results import extras_of, latest_rows, read_results
from probes.reporting.rigor_tables import NOTES as RIGOR_NOTES, TITLES as RIGOR_TITLES, rigor_tables

TABLE_NOTES = RIGOR_NOTES   # table key -> a note printed under it (tables.md, the Reproduce page)
PAPER_TITLES = {"paper_wsd": "Paper, Table 5: all-words fine-grained WSD F1",
                "paper_pos": "Paper, Table 6: PTB POS tagging accuracy"}


def titles() -> dict[str, str]:
    """Table key -> title, in the order ``tables.md`` shows them (probes in registry order, the claim
    tests and selectivity/MDL, then the papers')."""
    out: dict[str, str] = {}
    for spec in all_probes():
        out.update(spec.table_titles)
    return {**out, **{k: RIGOR_TITLES[k] for k in ("claims", "best_layer", "selectivity_mdl")}, **PAPER_TITLES,
            "published_rigor": RIGOR_TITLES["published_rigor"]}


def paper_tables() -> dict[str, pd.DataFrame]:
    return {
        "paper_wsd": pd.DataFrame(list(paper.WSD_TABLE5.items()), columns=["paper Table 5 (ALL)", "F1"]),
        "paper_pos": pd.DataFrame(list(paper.POS_TABLE6.items()), columns=["paper Table 6 (PTB)", "accuracy"]),
    }


def build_tables(results_dir: Path, models: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Paper-style tables (DataFrames) from the result files under ``results_dir`` ({} when there are none).

    ``models``: keep only these models' rows (and every probe's baselines).
    """
    results = read_results(results_dir)   # one read of the files serves the rows and the extras
    df = latest_rows(results)
    if df.empty:
        return {}
    specs = all_probes()
    if models is not None:
        keep = set(models).union(*(spec.baseline_models for spec in specs))
        df = df[df.model.isin(keep)]
    extras = extras_of(results)
    tables: dict[str, pd.DataFrame] = {}
    for spec in specs:
        tables.update(spec.tables(df, extras))
    return {**tables, **rigor_tables(results, df, models), **paper_tables()}


def markdown_table(df: pd.DataFrame) -> str:
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
    for key, title in titles().items():
        if key not in tables:
            continue
        t = tables[key]
        t.to_csv(out / f"{key}.csv", index=False)
        lines += [f"## {title}", "", markdown_table(t), ""]
        if key in TABLE_NOTES:
            lines += [TABLE_NOTES[key], ""]
    if timings:
        lines += ["## Wall time (s)", ""] + [f"- {k}: {v:.0f}" for k, v in timings.items()] + [""]
    path = out / "tables.md"
    path.write_text("\n".join(lines))
    return path
