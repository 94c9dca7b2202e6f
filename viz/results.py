"""Probe results (``probes.results.load_results`` tables) reshaped for the Probes page's charts.

The results table has one row per measurement: model, probe, dataset, layer (a string: "0",
"1", …, "mean", "first-sense", "baseline", "all λ=1" …), metric, value, n, timestamp, command.
What to draw for a probe comes from its registry entry (``probes.registry.ChartSpec``): the
metrics, the order of datasets and of non-numeric layers, the baseline models (their own series)
and the per-category breakdown.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from corpora.paths import REPO_ROOT
from probes.registry import ProbeSpec
from probes.result_names import base_probe
from probes.results import COLUMNS, default_results_dir, load_results, on_slice_of, split_slice
from probes.tasks.wsd.tables import WORD_ROW

#: The committed contextuality runs (``reproduce --probes contextuality --out docs/results``).
CONTEXTUALITY_RUNS = REPO_ROOT / "docs" / "results" / "contextuality" / "runs"


def result_dirs() -> tuple[Path, ...]:
    """Where probe result JSON files live, most authoritative first.

    ``docs/results/runs`` (committed, written by ``python -m probes reproduce --out docs/results``), the committed
    UD EWT runs (``docs/results/ud_ewt/runs``: the tag probe; ``…/structural_runs``: the structural probe and head
    syntax), the committed contextuality runs, ``results/runs`` (a local reproduce run), ``<cache>/results``
    (single ``python -m probes wsd|pos|mix`` runs).
    """
    committed = REPO_ROOT / "docs" / "results"
    return (
        committed / "runs",
        committed / "ud_ewt" / "runs",
        committed / "ud_ewt" / "structural_runs",
        CONTEXTUALITY_RUNS,
        REPO_ROOT / "results" / "runs",
        default_results_dir(),
    )


def label_dir(d: Path) -> str:
    try:
        return str(d.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(d)


def dirs_with_results(dirs: tuple[Path, ...] | None = None) -> list[Path]:
    """The directories of ``dirs`` (default :func:`result_dirs`) that hold result JSON files."""
    return [d for d in (result_dirs() if dirs is None else dirs) if d.is_dir() and any(d.glob("*.json"))]


def folder_version(d: str | Path) -> tuple[tuple[str, int, int], ...]:
    """(name, size, mtime) of each file in ``d``: changes whenever a result there is written, replaced or removed.

    The app's caches of a results folder key on it: a folder is read again when it changed, never on a timer
    (a 30 s expiry made the Reproduce page's next visitor wait ~7 s to rebuild unchanged tables).
    """
    try:
        files = [(p.name, p.stat()) for p in Path(d).iterdir() if p.is_file()]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in files))


def load_dir(d: Path) -> pd.DataFrame:
    """One directory's results (``probes.results.load_results``) with a ``source`` column.

    Directories are not merged: a quick ``--limit`` run must never stand in for a full one.
    """
    df = load_results(d)
    return df.assign(source=label_dir(d)) if not df.empty else pd.DataFrame(columns=[*COLUMNS, "source"])


#: A curve's or a named row's columns after its keys; of them, those an older or a baseline result may lack.
VALUE_COLUMNS = ("value", "n", "lo", "hi", "unit", "clusters", "draws", "seeds")
OPTIONAL = VALUE_COLUMNS[1:]


def with_optional(sel: pd.DataFrame, columns: tuple[str, ...] = OPTIONAL) -> pd.DataFrame:
    """``sel`` with every one of ``columns`` (NaN where the results have none)."""
    return sel.assign(**{c: sel[c] if c in sel else float("nan") for c in columns})


def datasets_of(df: pd.DataFrame, spec: ProbeSpec) -> list[str]:
    """The probe's evaluation splits present in ``df``: the spec's order first (a slice's ``ALL (limit 3)`` where
    ``ALL`` is: a quick run opens on the headline set, not on the first file's), breakdown rows (WSD per POS, a
    lexical sample's per-word rows) left out."""
    present = [d for d in dict.fromkeys(df.loc[df["probe"] == spec.name, "dataset"]) if not WORD_ROW.match(str(d))]
    if spec.chart.breakdown:
        present = [d for d in present if not d.startswith((spec.chart.breakdown, *spec.chart.breakdown_retired))]
    order = {name: i for i, name in enumerate(spec.chart.datasets)}

    def rank(dataset: str) -> tuple[bool, int]:  # full runs first, then slices, each in the spec's order
        name, limit = split_slice(str(dataset))
        return limit is not None, order.get(name, len(order))

    return sorted(present, key=rank)


def metrics_of(df: pd.DataFrame, spec: ProbeSpec, dataset: str) -> list[str]:
    present = set(df.loc[(df["probe"] == spec.name) & (df["dataset"] == dataset), "metric"])
    return [m for m in spec.chart.metrics if m in present]


def layer_curves_frame(
    df: pd.DataFrame, probe: str, dataset: str, metric: str, exclude: set[str] | frozenset[str] = frozenset()
) -> pd.DataFrame:
    """model, layer (int), value, n, lo, hi, unit, clusters, draws, seeds for the numbered layers of one probe/dataset/
    metric.

    ``lo``/``hi`` are the rows' bootstrap 95% interval (NaN where a result has none), resampling ``clusters``
    ``unit`` s (documents, sentences) and, for a control task, its ``draws`` label draws; ``seeds``: how many
    training seeds a mean averages (NaN: one run)."""
    sel = df[
        (df["probe"] == probe)
        & (df["dataset"] == dataset)
        & (df["metric"] == metric)
        & ~df["model"].isin(list(exclude))
    ]
    sel = sel[sel["layer"].astype(str).str.fullmatch(r"\d+")]
    sel = with_optional(sel)
    out = sel.assign(layer=sel["layer"].astype(int))[["model", "layer", *VALUE_COLUMNS]]
    out = out.astype({"value": float, "lo": float, "hi": float})
    return out.sort_values(["model", "layer"]).reset_index(drop=True)


def named_rows_frame(df: pd.DataFrame, spec: ProbeSpec, dataset: str, metric: str) -> pd.DataFrame:
    """model, layer, value, n, lo, hi of the probe's named (non-numeric) layer rows in the spec's order,
    e.g. the λ ablation's "last", "all λ=1", "all λ=0.001"; baseline models left out."""
    order = list(spec.chart.layer_order)
    sel = df[
        (df["probe"] == spec.name)
        & (df["dataset"] == dataset)
        & (df["metric"] == metric)
        & ~df["model"].isin(list(spec.baseline_models))
        & df["layer"].astype(str).isin(order)
    ]
    sel = with_optional(sel)
    out = sel[["model", "layer", *VALUE_COLUMNS]]
    out = out.astype({"value": float, "lo": float, "hi": float})
    return (
        out.assign(_o=out["layer"].map(order.index))
        .sort_values(["model", "_o"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def baseline_frame(df: pd.DataFrame, spec: ProbeSpec, dataset: str, metric: str) -> pd.DataFrame:
    """label, model, value, n, lo, hi of the probe's baseline results: each its own series."""
    sel = df[
        (df["probe"] == spec.name)
        & (df["dataset"] == dataset)
        & (df["metric"] == metric)
        & df["model"].isin(list(spec.baseline_models))
    ]
    sel = with_optional(sel)
    out = sel.assign(label=sel["model"].map(spec.baseline_models))[["label", "model", "value", "n", "lo", "hi"]]
    return out.astype({"value": float, "lo": float, "hi": float}).reset_index(drop=True)


def best_layer(df: pd.DataFrame, model: str, probe: str, dataset: str, metric: str) -> str | None:
    curves = layer_curves_frame(df, probe, dataset, metric)
    curves = curves[curves["model"] == model]
    if curves.empty:
        return None
    return str(int(curves.loc[curves["value"].idxmax(), "layer"]))


def baseline_only(df: pd.DataFrame, specs: list[ProbeSpec]) -> set[str]:
    """The models of the result rows ``df`` that are only ever a probe's baseline (the majority tag, WordNet's
    first sense); a model that is one probe's baseline and another's subject (GloVe: the λ ablation's input,
    and a model of its own on POS and WSD) is a model."""
    baseline_of = {spec.name: set(spec.baseline_models) for spec in specs}
    as_baseline = [model in baseline_of.get(base_probe(probe), ()) for model, probe in zip(df["model"], df["probe"])]
    only = pd.Series(as_baseline, index=df["model"].to_numpy()).groupby(level=0).all()
    return set(only[only].index)


BREAKDOWN_COLUMNS = ["label", "model", "layer", "chosen on", "category", "value", "n", "lo", "hi", "unit", "clusters"]


def breakdown_scored(spec: ProbeSpec, dataset: str) -> str:
    """The set a probe's breakdown scores (WSD: ALL w/o SE07), on the slice ``dataset`` is on."""
    return on_slice_of((spec.chart.breakdown or "").rstrip(":"), dataset)


def breakdown_frame(df: pd.DataFrame, spec: ProbeSpec, metric: str, dataset: str) -> pd.DataFrame:
    """Per-category scores (e.g. WSD F1 on ALL w/o SE07 by POS) of the slice ``dataset`` is on (a ``--limit`` run's rows
    never mix with a full run's), a row per model and category: label (the legend's: "minilm (layer 6)"), model,
    layer, chosen on, category, value, n, lo, hi, unit, clusters.

    A model is shown at its best numbered layer on ``spec.chart.breakdown_ranked_on`` (a dev set: WSD's SemEval-07,
    which the bars' set does not hold) where its results have that set, else at its best on the set the bars score
    (ALL w/o SE07) — the test set choosing the layer it is then scored on, an optimistic pick; "chosen on" names the set
    that chose. A baseline model is shown as it is ("chosen on" empty). ``lo``/``hi``: the rows' 95% interval.
    """
    prefix, scored = spec.chart.breakdown or "", breakdown_scored(spec, dataset)
    rank_on = on_slice_of(spec.chart.breakdown_ranked_on, dataset) if spec.chart.breakdown_ranked_on else None
    sel_all = df[(df["probe"] == spec.name) & (df["metric"] == metric)]
    if sel_all.empty:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    name, limit = zip(*map(split_slice, sel_all["dataset"]))
    own_slice = split_slice(dataset)[1]
    sel_all = sel_all.assign(_name=name)[[lim == own_slice for lim in limit]]
    sel_all = sel_all[sel_all["_name"].str.startswith(prefix)]
    frames = []
    for model in dict.fromkeys(sel_all["model"]):
        if model in spec.baseline_models:
            sel = sel_all[sel_all["model"] == model]
            label, chosen_on = spec.baseline_models[model], ""
        else:
            layer, chosen_on = best_layer(df, model, spec.name, rank_on, metric) if rank_on else None, rank_on
            if layer is None:  # no rows on the dev set: the scored set chooses
                layer, chosen_on = best_layer(df, model, spec.name, scored, metric), scored
            sel = sel_all[(sel_all["model"] == model) & (sel_all["layer"] == layer)]
            label = f"{model} (layer {layer})"
        sel = with_optional(sel)
        frames.append(
            sel.assign(label=label, category=sel["_name"].str[len(prefix) :], **{"chosen on": chosen_on})[
                BREAKDOWN_COLUMNS
            ]
        )
    if not frames:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    return out.astype({"value": float, "lo": float, "hi": float}).reset_index(drop=True)


def breakdown_note(frame: pd.DataFrame, df: pd.DataFrame, spec: ProbeSpec, dataset: str) -> str:
    """Which set chose the layer each model's breakdown (``breakdown_frame``) is shown at, in sentences, with the
    sets' sizes (``n`` of the results ``df``); the models whose layer the scored set chose itself are named, as
    their bars are optimistic."""
    models, scored = frame[frame["chosen on"] != ""].drop_duplicates("model"), breakdown_scored(spec, dataset)

    def size(name: str) -> str:
        n = pd.to_numeric(df.loc[(df["probe"] == spec.name) & (df["dataset"] == name), "n"], errors="coerce").max()
        return f"the {int(n):,} instances of {name}" if pd.notna(n) else name

    sentences = [
        f"Each model is shown at the layer that scores best on {size(name)}, not at its best on {size(scored)}, "
        "which these bars score."
        for name in sorted(set(models["chosen on"]) - {scored})
    ]
    if own := models.loc[models["chosen on"] == scored, "model"].tolist():
        sentences.append(
            f"No dev-set rows for {', '.join(own)}: {scored} chose {'its' if len(own) == 1 else 'their'} layer "
            "itself, an optimistic pick."
        )
    return " ".join(sentences)


def wide_table(
    df: pd.DataFrame, probe: str, dataset: str, metric: str, layer_order: tuple[str, ...] = ()
) -> pd.DataFrame:
    """model × layer table of one measure: numbered layers, then ``layer_order``, then the rest."""
    sel = df[(df["probe"] == probe) & (df["dataset"] == dataset) & (df["metric"] == metric)]
    if sel.empty:
        return pd.DataFrame()
    table = sel.pivot_table(index="model", columns="layer", values="value", aggfunc="last")

    def order(col: str) -> tuple:
        col = str(col)
        if col.isdigit():
            return (0, int(col), "")
        return (1, layer_order.index(col), "") if col in layer_order else (2, 0, col)

    return table[sorted(table.columns, key=order)]
