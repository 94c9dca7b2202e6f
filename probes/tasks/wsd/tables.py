"""The WSD probe's tables: the built-in SemCor → all-words table with the paper beside, F1 per POS,
one table per user dataset (F1 per layer, with its 95% interval) and, for a lexical sample of several
target words, F1 per word (each model at its best layer on the pooled F1)."""

from __future__ import annotations

import re

import pandas as pd

from probes.reporting import paper
from probes.stats.units import interval_text, over_text, over_texts, value_interval_text
from probes.tasks.wsd.scoring import BY_POS_SET, EVAL_LABELS, EVAL_SETS, PAPER_ALL

FIRST_SENSE = "wordnet-1st-sense"
SEMCOR_MFS = "semcor-mfs"
TRAIN_MFS = "most-frequent-label"
BASELINE_MODELS = {
    FIRST_SENSE: "WordNet 1st sense",
    SEMCOR_MFS: "MFS in SemCor",
    TRAIN_MFS: "most frequent training label",
}
BUILTIN_SPLITS = EVAL_SETS + (PAPER_ALL,)
WORD_ROW = re.compile(r"^(?P<name>.*):word=(?P<word>.+?)(?P<limit> \(limit \d+\))?$")  # "<dataset>:word=bank"


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
    """WSD F1 per (model, layer) and evaluation set with the paper's Table 5 beside; F1 per POS on ALL w/o SE07;
    ``wsd_data:<dataset>`` per user dataset (rows whose dataset is not a built-in split); ``wsd_words:<dataset>``
    per lexical sample with per-word rows (``word_tables``)."""
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
        t["CI over"] = [over_text(u, k, lo=lo) for u, k, lo in zip(ci.unit, ci.clusters, ci.lo)]
        t["paper (same column as ALL w/o SE07)"] = [_paper_column(m) for m in t["model"]]
        tables["wsd"] = t
    by_pos = wsd[wsd.dataset.str.startswith(f"{BY_POS_SET}:")]
    if not by_pos.empty:
        cells = by_pos.assign(
            cell=[value_interval_text(v, lo, hi) for v, lo, hi in zip(by_pos.value, by_pos.lo, by_pos.hi)]
        )
        p = cells.pivot_table(index=["model", "layer"], columns="dataset", values="cell", aggfunc="last")
        p.columns = [c.split(":")[1] for c in p.columns]
        p = p[[c for c in ("NOUN", "VERB", "ADJ", "ADV") if c in p.columns]].reset_index()
        # each POS resamples the documents that have it (on ALL w/o SE07: NOUN 23, VERB/ADJ/ADV 10)
        units = by_pos.groupby(["model", "layer"]).agg(unit=("unit", "last"), clusters=("clusters", list)).reset_index()
        units = p[["model", "layer"]].merge(units, on=["model", "layer"], how="left")
        p["CI over"] = [over_texts(u, k if isinstance(k, list) else []) for u, k in zip(units.unit, units.clusters)]
        tables["wsd_by_pos"] = p
    user = wsd[~wsd.dataset.isin(BUILTIN_SPLITS) & ~wsd.dataset.str.contains(":", regex=False)]
    for name, rows in user.groupby("dataset", sort=True):
        cols = ["model", "layer", "value", "n"] + [c for c in ("lo", "hi") if c in rows.columns]
        t = rows[cols].rename(columns={"value": "F1"}).sort_values(["model", "layer"]).reset_index(drop=True)
        tables[f"wsd_data:{name}"] = t
    tables.update(word_tables(wsd))
    return tables


def word_tables(wsd: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``wsd_words:<dataset>``: one row per target word (``"<dataset>:word=W"`` rows), its n, and one column
    per model at the layer of its best pooled F1 on that dataset (a baseline as it is): "F1 [lo, hi]"."""
    found = wsd.dataset.str.extract(WORD_ROW)
    hit = found.word.notna()
    words = wsd[hit].assign(pooled=found.name[hit] + found.limit[hit].fillna(""), word=found.word[hit])
    tables = {}
    for name, part in words.groupby("pooled", sort=True):
        pooled = wsd[wsd.dataset == name]
        cols = {}
        for model, rows in part.groupby("model", sort=True):
            mine = pooled[pooled.model == model]
            layer = mine.layer.iloc[int(mine.value.to_numpy().argmax())] if len(mine) else rows.layer.iloc[0]
            best = rows[rows.layer == layer]
            label = model if model in BASELINE_MODELS else f"{model} (layer {layer})"
            cells = [value_interval_text(v, lo, hi) for v, lo, hi in zip(best.value, best.lo, best.hi)]
            cols[label] = pd.Series(cells, index=best.word.to_numpy())
        t = pd.DataFrame(cols)
        n = part.groupby("word")["n"].max()
        t.insert(0, "n", n.reindex(t.index).astype("Int64"))
        tables[f"wsd_words:{name}"] = t.rename_axis("word").reset_index()
    return tables
