"""The Reproduce page's data: paper-style tables, a paper-vs-ours summary, run notes.

Tables come from :func:`probes.tables.build_tables` (the same code that writes
``docs/results/tables.md``), so the app and the committed tables never disagree.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from probes import paper
from probes.tables import build_tables, markdown_table, paper_tables, titles

PAPER_WSD = {"WordNet 1st sense": "WordNet 1st Sense Baseline", "biLM layer 1": "biLM, First layer",
             "biLM layer 2": "biLM, Second layer", "CoVe layer 1": "CoVe, First Layer",
             "CoVe layer 2": "CoVe, Second Layer"}
PAPER_POS = {"biLM layer 1": "biLM, First Layer", "biLM layer 2": "biLM, Second Layer",
             "CoVe layer 1": "CoVe, First Layer", "CoVe layer 2": "CoVe, Second Layer"}


def load_tables(results_dir: Path | None) -> dict[str, pd.DataFrame]:
    """Paper-style tables from a results directory; only the paper's tables when there is none."""
    if results_dir is None:
        return paper_tables()
    tables = build_tables(Path(results_dir))
    return tables or paper_tables()


def _best_rows(df: pd.DataFrame, value_col: str) -> list[tuple[str, str, float]]:
    """(model, layer, value) of each model's best numbered layer."""
    out = []
    sel = df[df["layer"].astype(str).str.fullmatch(r"\d+")].copy()
    sel[value_col] = pd.to_numeric(sel[value_col], errors="coerce")
    for model, grp in sel.dropna(subset=[value_col]).groupby("model", sort=False):
        best = grp.loc[grp[value_col].idxmax()]
        out.append((str(model), str(best["layer"]), float(best[value_col])))
    return out


def comparison_frame(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Long table task, system, source ("paper" / "ours"), score for the at-a-glance chart."""
    rows = []
    for label, key in PAPER_WSD.items():
        rows.append({"task": "WSD F1 (ALL)", "system": label, "source": "paper", "score": paper.WSD_TABLE5[key]})
    for label, key in PAPER_POS.items():
        rows.append({"task": "POS accuracy", "system": label, "source": "paper", "score": paper.POS_TABLE6[key]})
    ours = 0
    wsd = tables.get("wsd")
    if wsd is not None and "ALL" in wsd.columns:
        fs = wsd[wsd["model"] == "wordnet-1st-sense"]
        if len(fs):
            rows.append({"task": "WSD F1 (ALL)", "system": "WordNet 1st sense", "source": "ours",
                         "score": float(fs["ALL"].iloc[0])})
            ours += 1
        for model, layer, value in _best_rows(wsd[wsd["model"] != "wordnet-1st-sense"], "ALL"):
            rows.append({"task": "WSD F1 (ALL)", "system": f"{model} layer {layer}", "source": "ours", "score": value})
            ours += 1
    pos = tables.get("pos")
    col = "accuracy (CoNLL-2000 test)"
    if pos is not None and col in pos.columns:
        base = pos[pos["model"] == "majority-tag"]
        if len(base):
            rows.append({"task": "POS accuracy", "system": "majority tag", "source": "ours",
                         "score": float(base[col].iloc[0])})
        for model, layer, value in _best_rows(pos[pos["model"] != "majority-tag"], col):
            rows.append({"task": "POS accuracy", "system": f"{model} layer {layer}", "source": "ours", "score": value})
            ours += 1
    return pd.DataFrame(rows, columns=["task", "system", "source", "score"]) if ours else pd.DataFrame(
        columns=["task", "system", "source", "score"])


def tables_markdown(tables: dict[str, pd.DataFrame]) -> str:
    """Every table as one Markdown document (what the download button gives)."""
    parts = ["# Embedding Probe Lab — Peters et al. (2018) §5 reproduced", "",
             f"Paper numbers: {paper.SOURCE}.", ""]
    for key, title in titles().items():
        if key in tables:
            parts += [f"## {title}", "", markdown_table(tables[key]), ""]
    return "\n".join(parts)


def read_run_notes(results_dir: Path) -> str:
    """How a results directory was produced: its README.md, else tables.md's command and timings."""
    root = results_dir.parent if results_dir.name == "runs" else results_dir
    readme = root / "README.md"
    if readme.is_file():
        return readme.read_text(encoding="utf-8", errors="replace")
    tables_md = root / "tables.md"
    if not tables_md.is_file():
        return ""
    text = tables_md.read_text(encoding="utf-8", errors="replace")
    notes = [line for line in text.splitlines() if line.startswith("Command:")]
    m = re.search(r"## Wall time \(s\)\n\n((?:- .*\n?)+)", text)
    if m:
        notes += ["", "Wall time (s):", "", m.group(1).strip()]
    return "\n".join(notes)
