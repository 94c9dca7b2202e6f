"""Probe results (``probes.results.load_results`` tables) reshaped for the Probes page's charts.

The results table has one row per measurement: model, probe, dataset, layer (a string: "0",
"1", …, "mean", "first-sense", "baseline", "λ=1" …), metric, value, n, timestamp, command.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from probes.results import COLUMNS, load_results

REPO_ROOT = Path(__file__).resolve().parent.parent


def result_dirs() -> tuple[Path, ...]:
    """Where probe result JSON files live, most authoritative first.

    ``docs/results/runs`` (committed, written by ``python -m probes reproduce --out docs/results``),
    ``results/runs`` (a local reproduce run), ``<cache>/results`` (single ``python -m probes
    wsd|pos|mix`` runs).
    """
    from corpora.paths import cache_dir

    return (REPO_ROOT / "docs" / "results" / "runs", REPO_ROOT / "results" / "runs", cache_dir() / "results")


def label_dir(d: Path) -> str:
    try:
        return str(d.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(d)
WSD_SETS = ("ALL", "senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015")
BASELINE_MODELS = {"wordnet-1st-sense": "WordNet 1st sense", "majority-tag": "majority tag per word"}


def dirs_with_results(dirs: tuple[Path, ...] | None = None) -> list[Path]:
    """The directories of ``dirs`` (default :func:`result_dirs`) that hold result JSON files."""
    return [d for d in (result_dirs() if dirs is None else dirs) if d.is_dir() and any(d.glob("*.json"))]


def load_dir(d: Path) -> pd.DataFrame:
    """One directory's results (``probes.results.load_results``) with a ``source`` column.

    Directories are not merged: a quick ``--limit`` run must never stand in for a full one.
    """
    df = load_results(d)
    return df.assign(source=label_dir(d)) if not df.empty else pd.DataFrame(columns=[*COLUMNS, "source"])


def rows_to_frame(result: dict) -> pd.DataFrame:
    """One probe run's result dict (as ``run_wsd``/``run_pos`` return) as a results table."""
    recs = [{"model": result.get("model"), "probe": result.get("probe"), "dataset": str(r["dataset"]),
             "layer": str(r["layer"]), "metric": r["metric"], "value": r["value"], "n": r.get("n"),
             "timestamp": result.get("timestamp", ""), "command": result.get("command", "")}
            for r in result.get("rows", [])]
    return pd.DataFrame.from_records(recs, columns=COLUMNS)


def layer_curves_frame(df: pd.DataFrame, probe: str, dataset: str, metric: str) -> pd.DataFrame:
    """model, layer (int), value for the numbered layers of one probe/dataset/metric, sorted."""
    sel = df[(df["probe"] == probe) & (df["dataset"] == dataset) & (df["metric"] == metric)]
    sel = sel[sel["layer"].astype(str).str.fullmatch(r"\d+")]
    out = sel.assign(layer=sel["layer"].astype(int))[["model", "layer", "value"]]
    return out.sort_values(["model", "layer"]).reset_index(drop=True)


def baselines(df: pd.DataFrame, probe: str, dataset: str, metric: str) -> dict[str, float]:
    """Label -> value of the no-embedding baselines (WordNet first sense, majority tag)."""
    sel = df[(df["probe"] == probe) & (df["dataset"] == dataset) & (df["metric"] == metric)
             & df["model"].isin(list(BASELINE_MODELS))]
    return {BASELINE_MODELS[m]: float(v) for m, v in zip(sel["model"], sel["value"])}


def best_layer(df: pd.DataFrame, model: str, probe: str, dataset: str, metric: str) -> str | None:
    curves = layer_curves_frame(df, probe, dataset, metric)
    curves = curves[curves["model"] == model]
    if curves.empty:
        return None
    return str(int(curves.loc[curves["value"].idxmax(), "layer"]))


def pos_breakdown(df: pd.DataFrame, models: list[str], layer_of: dict[str, str]) -> pd.DataFrame:
    """WSD F1 on ALL by part of speech: model (with its layer), POS, F1, n."""
    rows = []
    for m in models:
        layer = layer_of.get(m)
        sel = df[(df["probe"] == "wsd") & (df["model"] == m) & (df["layer"] == layer)
                 & df["dataset"].str.startswith("ALL:") & (df["metric"] == "F1")]
        label = BASELINE_MODELS.get(m, f"{m} (layer {layer})")
        for ds, v, n in zip(sel["dataset"], sel["value"], sel["n"]):
            rows.append({"model": label, "POS": ds.split(":", 1)[1], "F1": float(v), "n": n})
    return pd.DataFrame(rows, columns=["model", "POS", "F1", "n"])


def wide_table(df: pd.DataFrame, probe: str, dataset: str, metric: str) -> pd.DataFrame:
    """model × layer table of one measure (layers in natural order)."""
    sel = df[(df["probe"] == probe) & (df["dataset"] == dataset) & (df["metric"] == metric)]
    if sel.empty:
        return pd.DataFrame()
    table = sel.pivot_table(index="model", columns="layer", values="value", aggfunc="last")

    def order(col: str) -> tuple:
        return (0, int(col), "") if str(col).isdigit() else (1, 0, str(col))

    return table[sorted(table.columns, key=order)]
