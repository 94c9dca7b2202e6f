"""The rigor tables of ``tables.md`` and the Reproduce page: claim tests, selectivity and MDL, published numbers.

- ``claims``: each of the paper's orderings tested per model (``probes.stats.claims``);
- ``selectivity_mdl``: per model and layer of a token-labelling probe (``pos``, ``tag``) the task
  accuracy, control accuracy and selectivity (Hewitt & Liang 2019) and the online codelength and
  compression of the task and its control task (Voita & Titov 2020), where a run measured them
  (``--control``, ``--mdl``); an interval is shown as "[lo, hi]" beside its value;
- ``best_layer``: per model, its best layer against the runner-up and against layer 0 (paired
  tests, ``probes.stats.comparisons``) on the paper's two per-layer tasks — is the best layer really best?
  The layers are ranked without the test set and the best is tested once on it, so the test set does not
  both choose and judge: WSD on SemEval-07 (the framework's dev set); POS on the linear probe's own held-out
  tenth of the CoNLL-2000 training tokens (its schedule's split, ``LinearProbe``; the kept state's accuracy,
  kept in each result's training history), since CoNLL-2000 has no dev split. The table is one family: raw
  and Holm-adjusted p, "significant" from the adjusted one.
- ``published_rigor``: what those two papers report for the original ELMo's layers, each followed by
  elmo-small's same layer as we measured it (``paper.RIGOR_DIFFERENCES`` says how the settings differ).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from probes.estimators import RIGOR_METRICS
from probes.estimators.mdl import ORDER_UNIT
from probes.reporting import paper
from probes.result_names import base_probe
from probes.results import ProbeResult
from probes.stats.claims import claims_table, holm_family
from probes.stats.comparisons import ALPHA, AT_THRESHOLD, MC_Z, compare, numbered_layers, outcome_table
from probes.stats.intervals import EXACT_FLIPS
from probes.stats.units import interval_text, over_text, value_interval_text
from probes.tasks.wsd.scoring import DEV_SET, PAPER_ALL

TOKEN_PROBES = ("pos", "tag")
#: What ranks the POS layers: the probe's held-out split of the training tokens (``_held_out_accuracy``).
HELD_OUT = "conll2000-train held-out tenth"
# probe -> (what ranks the layers, dataset that tests the best)
BEST_LAYER_DATASETS = {"wsd": (DEV_SET, PAPER_ALL), "pos": (HELD_OUT, "conll2000-test")}
TITLES = {
    "best_layer": "Is the best layer best? Each model's best layer (ranked on dev) against the runner-up and layer 0 "
    "(paired tests, Holm-corrected)",
    "claims": "The paper's claims tested per model (paired test on the same test set, resampling its documents or "
    "sentences; supported = Holm-adjusted p < 0.05; the MDL and selectivity rows: a rule without a test, named in "
    "their verdict)",
    "selectivity_mdl": "Control task selectivity (Hewitt & Liang 2019) and MDL online codelength (Voita & Titov 2020)",
    "published_rigor": "Published control-task and MDL numbers for ELMo's layers, each followed by our counterpart",
}
MC_NOTE = (  # under the tables that decide by Holm
    f'A decision that other random draws could turn reads "{AT_THRESHOLD}": Holm on every p moved {MC_Z} of its '
    "Monte Carlo standard errors down decides it otherwise than on every p moved up (exact p-values: McNemar's, "
    f"or a sign flip of at most {EXACT_FLIPS} units, enumerated, have none). "
)
NOTES = {  # printed under the table
    "published_rigor": paper.RIGOR_DIFFERENCES,
    "claims": "Interval: 95% cluster bootstrap of A − B over the unit named (documents, sentences), per comparison "
    "and not adjusted for multiplicity; p: cluster sign-flip permutation test (9,999 flips), with several seeds "
    "the larger of that and the two-way bootstrap's p (9,999 draws: resolution 0.0002); the verdict reads the "
    "Holm-adjusted p over the paired tests of this table (this table is one family; best_layer's another), so an "
    "interval may exclude 0 while the verdict is not significant. seeds: training seeds averaged per side (— : the "
    "1-NN WSD probe trains nothing; 3 seeds are few: the interval resamples them too). "
    "The MDL and selectivity rows are decided from the rows, without a p-value and outside the Holm family: an MDL "
    "ordering must hold in every data order of the run (A − B in kbits, the interval the range of the per-order "
    "differences; with 3 orders two tied layers agree one time in four, so this is no 5% test); a selectivity "
    "ordering needs the two layers' 95% intervals (over sentences and control draws) to be disjoint, as their "
    "control outcomes are not kept for a paired test. " + MC_NOTE + "Methods and what moved: docs/statistics.md.",
    "selectivity_mdl": "Intervals: 95% bootstrap; accuracy over the test sentences; control accuracy and "
    "selectivity over the unit named and, with several control draws, the draws too (rows run before issue 26 "
    "resample tokens, as their unit says: their control outcomes were not kept); MDL codelength and compression "
    "over the data orders (one order: no interval). control draws / MDL orders: random repeats averaged per cell "
    "(defaults 5 and 3); the control codelength uses one control label draw for all its data orders, so its "
    "interval holds no label-draw variance. accuracy is the newest run's, averaged over its seeds where it ran "
    "several; selectivity is the control run's own task accuracy (its first seed) minus the control accuracy, so "
    "accuracy − control accuracy can differ from it by the seeds' spread.",
    "best_layer": "Layers ranked without the test set and the best tested once on it: WSD on the dev set "
    "(SemEval-07, 3 documents); POS, as CoNLL-2000 has no dev split, on the linear probe's held-out tenth of the "
    "training tokens (the split its schedule watches; with several seeds, the first seed's). "
    "Intervals unadjusted, decisions on Holm-adjusted p over all rows of this table. " + MC_NOTE.rstrip(),
}


def _cell(row: pd.Series) -> str:
    return value_interval_text(row["value"], row.get("lo"), row.get("hi"))


def selectivity_mdl_table(df: pd.DataFrame) -> pd.DataFrame | None:
    """One row per (model, probe, layer) that measured control or MDL metrics; None when no run did."""
    # "pos" and its other probe families ("pos+mlp-256", probes.tasks.rigor_options.RigorOptions.probe_name)
    sel = df[df.probe.map(base_probe).isin(TOKEN_PROBES) & df.metric.isin(RIGOR_METRICS)]
    measured = sel[sel.metric != "accuracy"]
    if measured.empty:
        return None
    keys = measured[["model", "probe", "layer"]].drop_duplicates()
    sel = sel.merge(keys, on=["model", "probe", "layer"])
    # MDL rows are on the training split, the others on the test split: one cell per metric.
    sel = sel.assign(cell=sel.apply(_cell, axis=1))
    wide = sel.pivot_table(index=["model", "probe", "layer"], columns="metric", values="cell", aggfunc="last")
    wide = wide.reindex(columns=[m for m in RIGOR_METRICS if m in wide.columns]).reset_index()
    # Per cell: what the control/selectivity interval resamples, and how many random repeats it averages (label
    # draws: a row without "draws" had one; MDL data orders: a row without the order unit had one).
    last = lambda metric: sel[sel.metric == metric].groupby(["model", "probe", "layer"]).last()
    selectivity, codes = last("selectivity"), last("codelength_kbits")
    extra_columns = {
        "control/selectivity CI over": pd.Series(
            [over_text(u, k) for u, k in zip(selectivity.unit, selectivity.clusters)], index=selectivity.index
        ),
        "control draws": last("control_accuracy").draws.fillna(1).astype(int).astype(str),
        "MDL orders": codes.clusters.where(codes.unit == ORDER_UNIT, 1).astype(int).astype(str),
    }
    keys = wide.set_index(["model", "probe", "layer"]).index
    for column, values in extra_columns.items():
        wide[column] = keys.map(values)
    wide = wide.assign(_num=pd.to_numeric(wide.layer, errors="coerce")).sort_values(["model", "probe", "_num", "layer"])
    return wide.drop(columns="_num").fillna("n/a").reset_index(drop=True)


def _held_out_accuracy(results: Sequence[ProbeResult], probe: str) -> dict[tuple[str, str], float]:
    """(model, layer) -> the held-out accuracy of the probe's kept state (its schedule's split of the training data,
    per layer in ``extra["history"]``); ``results`` oldest first, the newest wins."""
    scores = {}
    for res in results:
        if res.probe == probe:
            for layer, history in (res.extra or {}).get("history", {}).items():
                kept = [entry["val_acc"] for entry in history if entry.get("kept") and "val_acc" in entry]
                held_out = kept or [entry["val_acc"] for entry in history if "val_acc" in entry]
                if held_out:  # the kept state's; runs before 2026-12-07 marked none, and kept the best accuracy's
                    scores[(res.model, str(layer))] = max(held_out)
    return scores


def _ranking(results: Sequence[ProbeResult], probe: str, dev: str) -> dict[tuple[str, str], float]:
    """(model, layer) -> the score that ranks the layers: held-out accuracy, or the mean outcome on a dev set."""
    if dev == HELD_OUT:
        return _held_out_accuracy(results, probe)
    return {side: float(out.mean()) for side, out in outcome_table(results, probe, dev).items()}


def best_layer_table(results: Sequence[ProbeResult], models: Sequence[str] | None = None) -> pd.DataFrame | None:
    """Per probe and model: best numbered layer (ranked without the test set, ``BEST_LAYER_DATASETS``; an exact tie
    goes to the lower layer, and the row says so) vs the runner-up and vs the first, tested on the test set (None:
    no outcomes kept)."""
    rows = []
    for probe, (dev, test) in BEST_LAYER_DATASETS.items():
        ranking, outcomes = _ranking(results, probe, dev), outcome_table(results, probe, test)
        for model in sorted({m for m, _ in outcomes if models is None or m in models}):
            layers = [layer for layer in numbered_layers(outcomes, model) if (model, layer) in ranking]
            if len(layers) < 2:
                continue
            ranked = sorted(layers, key=lambda layer: (-ranking[(model, layer)], int(layer)))
            # an exact tie for the top of the ranking is broken towards the lower layer: every row of it says so
            tie = "yes: the lower layer taken" if ranking[(model, ranked[0])] == ranking[(model, ranked[1])] else "no"
            # how far the best led the runner-up where it was chosen: a near tie (random:gpt-small's POS layers,
            # 0.005 points on 21,000 held-out tokens, about one token) chose its layer by chance
            margin = round(100 * (ranking[(model, ranked[0])] - ranking[(model, ranked[1])]), 3)
            pairs = [((model, ranked[0]), (model, ranked[1]))]
            if layers[0] not in ranked[:2]:
                pairs.append(((model, ranked[0]), (model, layers[0])))
            for t in compare(outcomes, pairs).itertuples():
                rows.append(
                    {
                        "probe": probe,
                        "ranked on": dev,
                        "test set": test,
                        "best": t.a,
                        "against": t.b,
                        "tie on the ranking set": tie,
                        "lead on the ranking set (points)": margin,
                        "difference (points)": t.diff,
                        "95% interval": interval_text(t.lo, t.hi),
                        "unit": f"{t.clusters} {t.unit}s",
                        "p": float(t.p),
                        "p_se": float(t.p_se),
                    }
                )
    if not rows:
        return None
    for row, (p_adj, borderline) in zip(rows, holm_family(rows)):
        row["significant (Holm p < 0.05)"] = AT_THRESHOLD if borderline else "yes" if p_adj < ALPHA else "no"
        del row["p_se"]  # what it decided is in the column above
    return pd.DataFrame(rows)


#: (attribute, column, decimals as the papers print them; None: as the number is, "173" kbits, "53.06" compression)
PUBLISHED_COLUMNS = (
    ("accuracy", "accuracy", 1),
    ("control_accuracy", "control acc.", 1),
    ("selectivity", "selectivity", 1),
    ("codelength_kbits", "codelength (kbits)", None),
    ("control_codelength_kbits", "control codelength", None),
    ("compression", "compression", None),
    ("control_compression", "control compression", None),
)


def published_rigor_table(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The papers' ELMo layers (``paper.RIGOR_PUBLISHED``), each group followed by our counterpart (elmo-small's
    same layer; Proj0's: our ELMo with random weights) with the linear probe (``pos`` runs with ``--control
    --mdl``; "n/a" where no run measured it)."""
    ours = pd.DataFrame(columns=["model", "probe", "layer", "metric", "value"]) if df is None else df[df.probe == "pos"]
    rows = []
    groups = list(dict.fromkeys((p.our_model, p.our_layer) for p in paper.RIGOR_PUBLISHED))
    for model, layer in sorted(groups, key=lambda g: (g[0] != paper.RANDOM_ELMO, int(g[1] or -1))):
        for p in (p for p in paper.RIGOR_PUBLISHED if (p.our_model, p.our_layer) == (model, layer)):
            rows.append(
                {
                    "source": p.source,
                    "representation": p.representation,
                    "probe": p.probe,
                    **{label: paper.fmt(getattr(p, attr), digits) for attr, label, digits in PUBLISHED_COLUMNS},
                }
            )
        if layer is None:
            continue
        mine = ours[(ours.model == model) & (ours.layer == layer)].drop_duplicates("metric", keep="last")
        cells = {r["metric"]: _cell(r) for _, r in mine.iterrows()}  # ours with its 95% interval (theirs have none)
        rows.append(
            {
                "source": "this lab (CoNLL-2000 test; MDL: its training split)",
                "representation": f"ours: {model} layer {layer}",
                "probe": "linear",
                **{label: cells.get(attr, "n/a") for attr, label, _ in PUBLISHED_COLUMNS},
            }
        )
    return pd.DataFrame(rows)


def rigor_tables(
    results: Sequence[ProbeResult], df: pd.DataFrame, models: Sequence[str] | None = None
) -> dict[str, pd.DataFrame]:
    """The rigor tables (best-layer and selectivity/MDL only when some run kept or measured them)."""
    tables = {"claims": claims_table(results, models)}
    best = best_layer_table(results, models)
    if best is not None:
        tables["best_layer"] = best
    sel = selectivity_mdl_table(df)
    if sel is not None:
        tables["selectivity_mdl"] = sel
    tables["published_rigor"] = published_rigor_table(df)
    return tables
