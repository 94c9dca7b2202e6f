"""What the Probes page shows for one probe: frames and figures built from a results table, no streamlit.

``probe_view`` is one (probe, evaluation set, metric): the per-layer curves and their baselines, the
figure (per layer, or per named row for the λ ablation), the model × layer table and the per-category
breakdown; ``rigor_view`` is a token probe's control task and MDL (task vs control accuracy and
codelength per layer, the selectivity/MDL table). The page caches both per results snapshot
(``frame_signature``), so a picker that comes back to a view only redraws it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from probes.registry import ProbeSpec
from probes.reporting.rigor_tables import selectivity_mdl_table
from probes.reporting.schedule_notes import schedule_note
from probes.results import ProbeResult
from probes.stats.claims import p_text
from probes.stats.comparisons import (
    ALPHA,
    AT_THRESHOLD,
    holm_decided,
    layer_comparisons,
    numbered_layers,
    outcome_table,
)
from probes.stats.intervals import smallest_sign_flip_p
from probes.stats.units import interval_text, over_text
from viz.probe_figures import breakdown_figure, layer_probe_figure, named_rows_figure, task_vs_control_figure
from viz.results import (
    baseline_frame,
    breakdown_frame,
    breakdown_note,
    layer_curves_frame,
    named_rows_frame,
    wide_table,
)

#: The two control-task panels: (task metric, control metric, on the training split?, what, the flag that measures it).
RIGOR_PANELS = (
    ("accuracy", "control_accuracy", False, "accuracy", "--control"),
    ("codelength_kbits", "control_codelength_kbits", True, "online codelength", "--mdl"),
)


def frame_signature(df: pd.DataFrame) -> int:
    """A content hash of a results frame (17 ms for 1,300 rows): the key of its cached views."""
    return int(pd.util.hash_pandas_object(df.astype(str), index=False).sum())


def styled(table: pd.DataFrame) -> pd.DataFrame:
    """Two decimals, and a dash where a model has no such layer (st.dataframe shows nulls as "None")."""
    return table.map(lambda v: "—" if pd.isna(v) else f"{v:.2f}" if isinstance(v, float) else str(v))


TwinOf = Callable[[str], str | None]  # a random-weight twin's trained model (``models.random_init.twin_base``)


def probe_view(
    df: pd.DataFrame,
    spec: ProbeSpec,
    dataset: str,
    metric: str,
    twin_of: TwinOf = lambda model: None,
    model_order: Sequence[str] = (),
) -> dict:
    """curves, base, rows (named rows), rows_figure, layer_figure, table, breakdown, breakdown_figure,
    breakdown_note (which set chose each model's layer) (a figure is None where there is nothing to draw),
    schedule_note (``probes.reporting.schedule_notes``: the drawn rows' probes trained under more than one schedule)."""
    name = spec.short_title
    curves = layer_curves_frame(df, spec.name, dataset, metric, exclude=set(spec.baseline_models))
    base = baseline_frame(df, spec, dataset, metric)
    rows = named_rows_frame(df, spec, dataset, metric) if curves.empty and spec.chart.layer_order else pd.DataFrame()
    view = {
        "curves": curves,
        "base": base,
        "rows": rows,
        "rows_figure": named_rows_figure(
            rows,
            base,
            order=spec.chart.layer_order,
            metric=metric,
            title=f"{name}: {metric} on {dataset}",
            twin_of=twin_of,
            model_order=model_order,
        )
        if not rows.empty
        else None,
        "layer_figure": layer_probe_figure(
            curves,
            base,
            metric=metric,
            y_range=spec.chart.y_range,
            y_title=spec.chart.axis_title(metric),
            small_n=spec.chart.small_n,
            title=f"{name}: {metric} on {dataset}, by layer",
            twin_of=twin_of,
            model_order=model_order,
        )
        if not curves.empty
        else None,
        "table": styled(
            wide_table(
                df[~df["model"].isin(list(spec.baseline_models))], spec.name, dataset, metric, spec.chart.layer_order
            )
        ),
        "breakdown": None,
        "breakdown_figure": None,
        "breakdown_note": "",
        "schedule_note": schedule_note(df[(df.probe == spec.name) & (df.dataset == dataset) & (df.metric == metric)]),
    }
    if spec.chart.breakdown:
        breakdown = breakdown_frame(df, spec, metric, dataset)
        if not breakdown.empty:
            view["breakdown"] = breakdown
            view["breakdown_figure"] = breakdown_figure(
                breakdown,
                metric=metric,
                title=f"{name}: {metric} by {spec.chart.breakdown_label}",
                twin_of=twin_of,
                model_order=model_order,
            )
            view["breakdown_note"] = breakdown_note(breakdown, df, spec, dataset)
    return view


def rigor_view(
    df: pd.DataFrame, probe: str, twin_of: TwinOf = lambda model: None, model_order: Sequence[str] = ()
) -> dict | None:
    """The selectivity/MDL table and, per ``RIGOR_PANELS`` entry, (figure, its data) or None when no run
    measured it; None when no run of ``probe`` measured either."""
    table = selectivity_mdl_table(df[df["probe"] == probe])
    if table is None:
        return None
    panels = []
    for task_metric, control_metric, on_train, what, _flag in RIGOR_PANELS:
        rows = df[(df["probe"] == probe) & df["metric"].isin([task_metric, control_metric])]
        # MDL codes the training split ("conll2000-train", or "… (limit N)" for a slice)
        rows = rows[rows["dataset"].str.contains(r"-train(?: \(limit \d+\))?$") == on_train]
        control = rows[rows["metric"] == control_metric]
        if control.empty:
            panels.append(None)
            continue
        measured, dataset = control["model"].unique(), control["dataset"].iloc[-1]
        curves = {
            m: layer_curves_frame(df[df["model"].isin(measured)], probe, dataset, m)
            for m in (task_metric, control_metric)
        }
        fig = task_vs_control_figure(
            curves[task_metric],
            curves[control_metric],
            metric=task_metric,
            title=f"{what}: task vs control on {dataset}",  # fits a half-width chart at 1280 px
            twin_of=twin_of,
            model_order=model_order,
        )
        panels.append(
            (fig, pd.concat([curves[task_metric].assign(task="task"), curves[control_metric].assign(task="control")]))
        )
    return {"table": table, "panels": panels}


def layer_tests(results: Sequence[ProbeResult], probe: str, dataset: str, model: str) -> pd.DataFrame | None:
    """Does each layer differ from the one before it? ``model``'s numbered layers on ``dataset``, each against the
    previous one (paired tests on the kept outcomes, ``probes.stats.comparisons.layer_comparisons``), as one family:
    raw and Holm-adjusted p, the decision on the adjusted one with its direction (two-sided: a layer significantly
    *worse* than the one before says so). ``attrs["fewest_units"]``: the fewest clusters any test resampled (with
    too few, ``probes.stats.intervals.smallest_sign_flip_p``, no test can decide). None when fewer than two layers
    kept outcomes."""
    outcomes = outcome_table(results, probe, dataset)
    if len(numbered_layers(outcomes, model)) < 2:
        return None
    t = layer_comparisons(outcomes, model, "previous")
    adjusted, borderline = holm_decided(t.p.astype(float), t.p_se.astype(float))
    table = pd.DataFrame(
        {
            "A": t.a,
            "B": t.b,
            "A − B (points)": t["diff"].round(2),
            "95% interval": [interval_text(lo, hi) for lo, hi in zip(t.lo, t.hi)],
            "unit": [over_text(u, k) for u, k in zip(t.unit, t.clusters)],
            "seeds": t.seeds,
            "p": [p_text(float(p)) for p in t.p],
            "p (Holm)": [p_text(float(p)) for p in adjusted],
            f"significant (Holm p < {ALPHA})": [
                AT_THRESHOLD if mc else "no" if p >= ALPHA else "yes: A higher" if d > 0 else "yes: A lower"
                for p, d, mc in zip(adjusted, t["diff"], borderline)
            ],
        }
    )
    table.attrs["fewest_units"] = int(t.clusters.min())
    return table


def undecidable_note(table: pd.DataFrame) -> str | None:
    """Why no row of a ``layer_tests`` table can read "yes", when none can: with its fewest units the sign-flip
    test's smallest p (``probes.stats.intervals.smallest_sign_flip_p``), times the number of tests (Holm's
    smallest adjusted p), is not under ``ALPHA`` — 3 documents give 0.25, 7 documents and 6 tests 0.094."""
    fewest = table.attrs["fewest_units"]
    raw = smallest_sign_flip_p(fewest)
    if (floor := min(1.0, raw * len(table))) < ALPHA:
        return None
    return (
        f"Only {fewest} resampled units: the sign-flip test's smallest p is {raw:.2g}, {floor:.2g} after Holm's "
        f"correction for these {len(table)} tests, so no difference on this set can be significant, however far "
        "apart the scores are."
    )
