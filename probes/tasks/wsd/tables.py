"""The WSD probe's tables: the built-in SemCor → all-words table with the paper beside, F1 per POS,
and one table per user dataset (F1 per layer, with its 95% interval)."""

from __future__ import annotations

import pandas as pd

from probes.reporting import paper
from probes.stats.units import interval_text, over_text, value_interval_text
from probes.tasks.wsd.scoring import EVAL_LABELS, EVAL_SETS, PAPER_ALL

FIRST_SENSE = "wordnet-1st-sense"
SEMCOR_MFS = "semcor-mfs"
TRAIN_MFS = "most-frequent-label"
BASELINE_MODELS = {
    FIRST_SENSE: "WordNet 1st sense",
    SEMCOR_MFS: "MFS in SemCor",
    TRAIN_MFS: "most frequent training label",
}
BUILTIN_SPLITS = EVAL_SETS + (PAPER_ALL,)


def _paper_column(model: str) -> str:
    """The paper's Table 5 rows beside ours (cited by table and row)."""
    t5 = paper.WSD_TABLE5
    if model == FIRST_SENSE:
        return f"Table 5, WordNet 1st Sense Baseline: {paper.fmt(t5['WordNet 1st Sense Baseline'])}"
    if model == SEMCOR_MFS:
        return "n/a"
    return (
        f"Table 5, biLM first/second layer: {t5['biLM, First layer']}/{t5['biLM, Second layer']}; "
        f"CoVe first/second layer: {t5['CoVe, First Layer']}/{t5['CoVe, Second Layer']}"
    )


def wsd_tables(df: pd.DataFrame, extras: list[dict]) -> dict[str, pd.DataFrame]:
    """WSD F1 per (model, layer) and evaluation set with the paper's Table 5 beside; F1 per POS on ALL;
    ``wsd_data:<dataset>`` per user dataset (rows whose dataset is not a built-in split)."""
    tables = {}
    wsd = df[(df.probe == "wsd") & (df.metric == "F1")]
    if wsd.empty:
        return tables
    builtin = wsd[wsd.dataset.isin(BUILTIN_SPLITS)]
    if not builtin.empty:
        t = builtin.pivot_table(index=["model", "layer"], columns="dataset", values="value", aggfunc="last")
        t = t[[c for c in BUILTIN_SPLITS if c in t.columns]].rename(columns=EVAL_LABELS).reset_index()
        headline = builtin[builtin.dataset == PAPER_ALL].drop_duplicates(["model", "layer"], keep="last")
        ci = t.merge(headline[["model", "layer", "lo", "hi", "unit", "clusters"]], on=["model", "layer"], how="left")
        t[f"{EVAL_LABELS[PAPER_ALL]} 95% CI"] = [interval_text(lo, hi) for lo, hi in zip(ci.lo, ci.hi)]
        t["CI over"] = [over_text(u, k) for u, k in zip(ci.unit, ci.clusters)]
        t["paper (same column as ALL w/o SE07)"] = [_paper_column(m) for m in t["model"]]
        tables["wsd"] = t
    by_pos = wsd[wsd.dataset.str.startswith("ALL:")]
    if not by_pos.empty:
        cells = by_pos.assign(
            cell=[value_interval_text(v, lo, hi) for v, lo, hi in zip(by_pos.value, by_pos.lo, by_pos.hi)]
        )
        p = cells.pivot_table(index=["model", "layer"], columns="dataset", values="cell", aggfunc="last")
        p.columns = [c.split(":")[1] for c in p.columns]
        p = p[[c for c in ("NOUN", "VERB", "ADJ", "ADV") if c in p.columns]].reset_index()
        units = (
            by_pos.groupby(["model", "layer"]).agg(unit=("unit", "last"), clusters=("clusters", "max")).reset_index()
        )
        units = p[["model", "layer"]].merge(units, on=["model", "layer"], how="left")
        p["CI over"] = [over_text(u, k) for u, k in zip(units.unit, units.clusters)]
        tables["wsd_by_pos"] = p
    user = wsd[
        ~wsd.dataset.isin(BUILTIN_SPLITS)
        & ~wsd.dataset.str.startswith("ALL:")
        & ~wsd.dataset.str.contains(":", regex=False)
    ]
    for name, rows in user.groupby("dataset", sort=True):
        cols = ["model", "layer", "value", "n"] + [c for c in ("lo", "hi") if c in rows.columns]
        t = rows[cols].rename(columns={"value": "F1"}).sort_values(["model", "layer"]).reset_index(drop=True)
        tables[f"wsd_data:{name}"] = t
    return tables
