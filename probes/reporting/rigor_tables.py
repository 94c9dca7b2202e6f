"""The rigor tables of ``tables.md`` and the Reproduce page: claim tests, selectivity and MDL, published numbers.

- ``claims``: each of the paper's orderings tested per model (``probes.stats.claims``);
- ``selectivity_mdl``: per model and layer of a token-labelling probe (``pos``, ``tag``) the task
  accuracy, control accuracy and selectivity (Hewitt & Liang 2019) and the online codelength and
  compression of the task and its control task (Voita & Titov 2020), where a run measured them
  (``--control``, ``--mdl``); an interval is shown as "[lo, hi]" beside its value;
- ``best_layer``: per model, its best layer against the runner-up and against layer 0 (paired
  tests, ``probes.stats.comparisons``) on the paper's two per-layer tasks — is the best layer really best?
- ``published_rigor``: what those two papers report for the original ELMo's layers, each followed by
  elmo-small's same layer as we measured it (``paper.RIGOR_DIFFERENCES`` says how the settings differ).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from probes.reporting import paper
from probes.results import ProbeResult
from probes.stats.claims import claims_table, verdict
from probes.stats.comparisons import compare, numbered_layers, outcome_table
from probes.tasks.rigor_options import RIGOR_METRICS, base_probe

TOKEN_PROBES = ("pos", "tag")
BEST_LAYER_DATASETS = {"wsd": "ALL-noSE07", "pos": "conll2000-test"}
TITLES = {
    "best_layer": "Is the best layer best? Each model's best layer against the runner-up and layer 0 (paired tests)",
    "claims": "The paper's claims tested per model (paired test on the same test instances; supported = p < 0.05)",
    "selectivity_mdl": "Control task selectivity (Hewitt & Liang 2019) and MDL online codelength (Voita & Titov 2020)",
    "published_rigor": "Published control-task and MDL numbers for ELMo's layers, each followed by our counterpart",
}
NOTES = {"published_rigor": paper.RIGOR_DIFFERENCES}  # printed under the table


def _cell(row: pd.Series) -> str:
    lo, hi = row.get("lo"), row.get("hi")
    has = lo is not None and hi is not None and lo == lo and hi == hi
    return f"{row['value']:.2f} [{lo:.2f}, {hi:.2f}]" if has else f"{row['value']:.2f}"


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
    wide = wide.assign(_num=pd.to_numeric(wide.layer, errors="coerce")).sort_values(["model", "probe", "_num", "layer"])
    return wide.drop(columns="_num").fillna("n/a").reset_index(drop=True)


def best_layer_table(results: Sequence[ProbeResult], models: Sequence[str] | None = None) -> pd.DataFrame | None:
    """Per probe and model: best numbered layer vs the runner-up and vs the first (None: no outcomes kept)."""
    rows = []
    for probe, dataset in BEST_LAYER_DATASETS.items():
        outcomes = outcome_table(results, probe, dataset)
        for model in sorted({m for m, _ in outcomes if models is None or m in models}):
            layers = numbered_layers(outcomes, model)
            if len(layers) < 2:
                continue
            ranked = sorted(layers, key=lambda layer: (-outcomes[(model, layer)].mean(), int(layer)))
            pairs = [((model, ranked[0]), (model, ranked[1]))]
            if layers[0] not in ranked[:2]:
                pairs.append(((model, ranked[0]), (model, layers[0])))
            for t in compare(outcomes, pairs).itertuples():
                rows.append(
                    {
                        "probe": probe,
                        "test set": dataset,
                        "best": t.a,
                        "against": t.b,
                        "difference (points)": t.diff,
                        "95% interval": f"[{t.lo:.2f}, {t.hi:.2f}]",
                        "p": "< 0.0001" if t.p < 1e-4 else f"{t.p:.4f}",
                        "significant (p < 0.05)": "yes" if verdict(t.diff, t.p) == "supported" else "no",
                    }
                )
    return pd.DataFrame(rows) if rows else None


PUBLISHED_COLUMNS = (
    ("accuracy", "accuracy"),
    ("control_accuracy", "control acc."),
    ("selectivity", "selectivity"),
    ("codelength_kbits", "codelength (kbits)"),
    ("control_codelength_kbits", "control codelength"),
    ("compression", "compression"),
    ("control_compression", "control compression"),
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
                    **{label: paper.fmt(getattr(p, attr), 2) for attr, label in PUBLISHED_COLUMNS},
                }
            )
        if layer is None:
            continue
        mine = ours[(ours.model == model) & (ours.layer == layer)].drop_duplicates("metric", keep="last")
        mine = mine.set_index("metric")["value"]
        rows.append(
            {
                "source": "this lab (CoNLL-2000 test; MDL: its training split)",
                "representation": f"ours: {model} layer {layer}",
                "probe": "linear",
                **{label: paper.fmt(mine.get(attr), 2) for attr, label in PUBLISHED_COLUMNS},
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
