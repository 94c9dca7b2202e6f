"""Charts of probe results: scores per layer with their 95% intervals, baselines as their own series,
named rows (the λ ablation), per-category bars, task vs control task — on axes that tell the truth.

Every chart here follows the same rules (issues 15 and 16): an interval is an error bar
(:func:`interval_error`); a baseline is a dashed series of its own, never a layer of a model; a
percentage axis spans at least ``viz.axes.MIN_SPAN`` points within [0, 100] (``viz.axes``; a point
at 100 is drawn whole: ``cliponaxis=False``), other metrics get their unit and start at 0; a slice of fewer
than :data:`SMALL_N` (``probes.stats.units``) test instances says so in the title.
Pure: figures from DataFrames, no streamlit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go

from probes.stats.units import SMALL_N, UNSTATED_UNIT, count_span, few_seeds, over_texts
from viz.axes import metric_axis, percent_or_zero
from viz.figures import chart_layout, line_style_key, model_styles
from viz.text import escape_html


def has_intervals(part: pd.DataFrame) -> bool:
    """Every row has its 95% interval (``lo`` and ``hi``)."""
    return {"lo", "hi"} <= set(part) and not part.empty and bool(part[["lo", "hi"]].notna().all(axis=None))


def _count_span(counts: pd.Series | None, missing_is_one: bool) -> str:
    """ "5" or "1–3": how many repeats (label draws, seeds) rows average; "" when none averages more than one.
    ``missing_is_one``: a row without a count is one run (seeds), not a row of another kind (the task's rows
    beside a control task's draws)."""
    counts = pd.to_numeric(counts, errors="coerce") if counts is not None else pd.Series(dtype=float)
    counts = counts.fillna(1) if missing_is_one else counts.dropna()
    return count_span(counts) if len(counts) and counts.max() > 1 else ""


def interval_note(part: pd.DataFrame) -> str:
    """What the error bars are: "95% CI over 23 documents" (the rows' resampling unit; "10–23 documents" where rows
    resample different numbers of it, as WSD's parts of speech do; ", 5 control draws" / ", 3 seeds" where they
    also average control-task label draws or training seeds, "(few)" after few seeds, as the tables mark them:
    ``few_seeds``), or that there are none."""
    stated = part.dropna(subset=["unit"]) if "unit" in part else part.iloc[:0]
    if not has_intervals(part):  # one document: resampling it cannot vary it, so the rows have none
        single = len(stated) and stated.clusters.iloc[0] < 2
        return f"no interval: all from one {stated.unit.iloc[0]}" if single else "no intervals recorded"
    if not len(stated):  # a file saved before units were stated
        return f"95% CI over {UNSTATED_UNIT}"
    repeats = ""
    for column, what, missing_is_one in (("draws", "control draws", False), ("seeds", "seeds", True)):
        if span := _count_span(stated.get(column), missing_is_one):
            most = pd.to_numeric(stated[column], errors="coerce").max()
            repeats += f", {span} {what}" + (few_seeds(most) if column == "seeds" else "")  # as the tables say it
    return f"95% CI over {over_texts(stated.unit.iloc[0], stated.clusters)}{repeats}"


def interval_error(part: pd.DataFrame, value: str = "value", **style) -> dict | None:
    """Plotly error bars (``error_y`` / ``error_x``) for the rows' 95% intervals (``lo``/``hi``);
    None when any row lacks one (no bar rather than a zero-width one)."""
    if not has_intervals(part):
        return None
    above, below = (part["hi"] - part[value]).clip(lower=0), (part[value] - part["lo"]).clip(lower=0)
    return dict(type="data", array=above, arrayminus=below, **({"thickness": 1.2, "width": 4} | style))


def _extent(part: pd.DataFrame) -> list[float]:
    """The values an axis must hold for these rows: each value, and its interval where every row has one."""
    return list(part["value"]) + (list(part["lo"]) + list(part["hi"]) if has_intervals(part) else [])


#: The k-th baseline's line: grey and dashed, each in its own dash and shade, so two baselines are told apart.
BASELINE_LINES = (("dash", "#444"), ("longdash", "#888"), ("12px,4px,2px,4px", "#666"))


def baseline_line(row, x: Sequence, k: int = 0, *, two_lines: bool = False, **kwargs) -> go.Scatter:
    """The ``k``-th baseline (``row``: label, value) as a dashed series of its own across ``x``, in the legend
    (``two_lines``: its "(baseline)" on a line of its own, for a narrow legend column); a baseline marked missing
    (no value) only as a legend entry that says so."""
    value = "missing" if pd.isna(row["value"]) else f"{row['value']:.2f}"
    label = escape_html(f"{row['label']} (baseline{': missing' if value == 'missing' else ''})")
    dash, colour = BASELINE_LINES[k % len(BASELINE_LINES)]
    return go.Scatter(
        x=list(x),
        y=[row["value"]] * len(x),
        name=label.replace(" (baseline", "<br>(baseline") if two_lines else label,
        mode="lines",
        line=dict(dash=dash, width=2, color=colour),
        hovertemplate=f"{label}: {value}<extra></extra>",
        **kwargs,
    )


def small_sample_note(curves: pd.DataFrame, small_n: int = SMALL_N) -> str | None:
    """ "small sample: n = …" when the smallest evaluation behind the curves has fewer than ``small_n``."""
    n = pd.to_numeric(curves.get("n"), errors="coerce").dropna() if "n" in curves else pd.Series(dtype=float)
    if n.empty or n.min() >= small_n:
        return None
    low, high = int(n.min()), int(n.max())
    return f"small sample: n = {low if low == high else f'{low}–{high}'}"


def layer_probe_figure(
    curves: pd.DataFrame,
    base: pd.DataFrame | None = None,
    *,
    title: str,
    y_title: str | None = None,
    metric: str = "accuracy",
    height: int = 440,
    small_n: int = SMALL_N,
    y_range: tuple[float, float] | None = None,
    twin_of: Callable[[str], str | None] = lambda model: None,
    model_order: Sequence[str] = (),
) -> go.Figure:
    """Per-layer scores of each model, with their 95% intervals (``lo``/``hi``) as error bars, and
    each baseline as its own dashed series (a line across every layer, in the legend). A random-weight twin
    (``twin_of``) is dotted in its trained model's colour (``viz.figures.model_styles``); a one-layer model
    among layered ones is a dash-dotted line across the layers (its interval drawn at its layer 0).

    curves: model, layer, value[, n, lo, hi]; base: label, value[, lo, hi] (``viz.results``).
    The y axis has the metric's unit and bounds (``viz.axes.metric_axis``; a percentage spans at least
    ``viz.axes.MIN_SPAN`` points) unless ``y_range`` fixes it (``ChartSpec.y_range``: cosines, CKA); a slice
    with fewer than ``small_n`` test instances says so in the title.
    """
    fig = go.Figure()
    layers = sorted(set(int(x) for x in curves["layer"])) or [0]
    x0, x1 = layers[0] - 0.25, layers[-1] + 0.25
    bounds: list[float] = []
    styles = model_styles(list(dict.fromkeys(curves["model"])), twin_of, model_order)
    for model, part in curves.groupby("model", sort=False):
        part, style, name = part.sort_values("layer"), styles[model], escape_html(str(model))
        # A model with one layer (a static one) beside layered models: its value across the layers, not a dot at 0
        flat = len(part) == 1 and len(layers) > 1
        run = sorted(int(x) for x in part["layer"])
        gaps = not flat and run != list(range(run[0], run[-1] + 1))  # layers it was not run at: no line across them
        hover = f"{name} layer %{{x}}: %{{y:.2f}}" + (" (n = %{customdata[0]})" if "n" in part else "")
        label = f"{name} (one layer)" if flat else f"{name} (layers {', '.join(map(str, run))} run)" if gaps else name
        fig.add_trace(
            go.Scatter(
                x=[x0, x1] if flat else part["layer"],
                y=[part["value"].iloc[0]] * 2 if flat else part["value"],
                name=label,
                legendgroup=name,
                mode="markers" if gaps else "lines+markers",  # a flat line: its symbol at both ends tells it apart
                marker=dict(size=7 if flat else 9, color=style["color"], symbol=style["symbol"]),
                line=dict(width=1.5 if flat else 2.5, color=style["color"], dash="dashdot" if flat else style["dash"]),
                error_y=None if flat else interval_error(part),
                cliponaxis=False,  # a point at the axis's end (100 %) is drawn whole, not cut in half
                customdata=None if flat or "n" not in part else part[["n"]],
                hovertemplate=f"{name} (one layer): %{{y:.2f}}<extra></extra>" if flat else hover + "<extra></extra>",
            )
        )
        if flat and (error := interval_error(part)) is not None:  # its interval, at the layer it has
            fig.add_trace(
                go.Scatter(
                    x=part["layer"],
                    y=part["value"],
                    mode="markers",
                    marker=dict(size=7, color=style["color"], symbol=style["symbol"]),
                    error_y=error,
                    legendgroup=name,
                    showlegend=False,
                    hoverinfo="skip",
                )
            )
        bounds += _extent(part)
    for k, (_, row) in enumerate((base if base is not None else pd.DataFrame()).iterrows()):
        fig.add_trace(baseline_line(row, [x0, x1], k, legendgroup="baselines"))
        bounds.append(row["value"])
        if pd.notna(row.get("lo")) and pd.notna(row.get("hi")):
            fig.add_trace(
                go.Scatter(
                    x=[x0, x1, x1, x0],
                    y=[row["lo"], row["lo"], row["hi"], row["hi"]],
                    fill="toself",
                    fillcolor="rgba(85,85,85,0.12)",
                    line=dict(width=0),
                    mode="lines",
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup="baselines",
                )
            )
            bounds += [row["lo"], row["hi"]]
    note = small_sample_note(curves, small_n)
    full_title = f"{title} — {', '.join(x for x in (note, interval_note(curves)) if x)}"
    chart_layout(fig, full_title, height)
    fig.update_xaxes(dtick=1, title="layer", range=[x0 - 0.1, x1 + 0.1])
    axis_title, axis_range = metric_axis(metric, bounds) if y_range is None else (metric, list(y_range))
    fig.update_yaxes(title=y_title or axis_title, range=axis_range)
    return fig


def named_rows_figure(
    rows: pd.DataFrame,
    base: pd.DataFrame | None = None,
    *,
    order: Sequence[str],
    title: str,
    metric: str = "accuracy",
    height: int = 420,
    twin_of: Callable[[str], str | None] = lambda model: None,
    model_order: Sequence[str] = (),
) -> go.Figure:
    """Bars per named row (e.g. the λ ablation's "last", "all λ=1", "all λ=0.001"), grouped by model, from
    0, with their 95% intervals as error bars; each baseline a dashed line of its own (legend entry) across the
    rows drawn (a category without bars, such as the λ ablation's "baseline" row, is not an empty slot).
    A random-weight twin (``twin_of``) has its trained model's colour, hatched.

    rows: model, layer, value[, lo, hi] (``viz.results.named_rows_frame``); base: label, value[, lo, hi]."""
    fig = go.Figure()
    order = [row for row in order if row in set(rows["layer"])]
    styles = model_styles(list(dict.fromkeys(rows["model"])), twin_of, model_order)
    for model, part in rows.groupby("model", sort=False):
        fig.add_trace(
            go.Bar(
                x=part["layer"],
                y=part["value"],
                name=escape_html(str(model)),
                marker_color=styles[model]["color"],
                marker_pattern_shape="" if styles[model]["dash"] == "solid" else "/",
                error_y=interval_error(part),
                text=[f"{v:.2f}" for v in part["value"]],
                textposition="outside",
                cliponaxis=False,
                hovertemplate=f"{escape_html(str(model))} %{{x}}: %{{y:.2f}}<extra></extra>",
            )
        )
    for k, (_, row) in enumerate((base if base is not None else pd.DataFrame()).iterrows()):
        fig.add_trace(baseline_line(row, order, k))
    chart_layout(fig, f"{title} — {interval_note(rows)}", height)
    fig.update_layout(barmode="group")
    fig.update_xaxes(categoryorder="array", categoryarray=list(order), title=None)
    base_values = [] if base is None else list(base["value"])
    fig.update_yaxes(**percent_or_zero(metric, list(rows["value"]) + base_values))
    return fig


def breakdown_figure(
    frame: pd.DataFrame,
    *,
    title: str,
    metric: str = "F1",
    height: int = 360,
    twin_of: Callable[[str], str | None] = lambda model: None,
    model_order: Sequence[str] = (),
) -> go.Figure:
    """Bars per category (WSD: part of speech), one series a model at its chosen layer, from 0, with their 95%
    intervals as error bars; a random-weight twin in its trained model's colour, hatched; each baseline a dashed
    segment of its own across each category's group of bars (in the legend, never a bar among the models).

    frame: ``viz.results.breakdown_frame`` (label, model, category, value[, lo, hi]; baselines have no
    "chosen on")."""
    fig = go.Figure()
    categories = list(dict.fromkeys(frame["category"]))
    where = {c: i for i, c in enumerate(categories)}
    is_base = frame["chosen on"] == ""
    models = frame[~is_base]
    styles = model_styles(list(dict.fromkeys(models["model"])), twin_of, model_order)
    for (model, label), part in models.groupby(["model", "label"], sort=False):
        name = escape_html(str(label))
        fig.add_trace(
            go.Bar(
                x=part["category"].map(where),
                y=part["value"],
                name=name,
                marker_color=styles[model]["color"],
                marker_pattern_shape="" if styles[model]["dash"] == "solid" else "/",
                error_y=interval_error(part),
                customdata=part[["category"]],
                hovertemplate=f"{name} %{{customdata[0]}}: %{{y:.2f}}<extra></extra>",
            )
        )
    for k, (label, part) in enumerate(frame[is_base].groupby("label", sort=False)):
        dash, colour = BASELINE_LINES[k % len(BASELINE_LINES)]
        xs, ys, texts = [], [], []
        for c, v in zip(part["category"], part["value"]):
            xs += [where[c] - 0.42, where[c] + 0.42, None]
            ys += [v, v, None]
            texts += [f"{c}: {v:.2f}"] * 2 + [None]
        name = escape_html(f"{label} (baseline)")
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                text=texts,
                name=name,
                mode="lines",
                line=dict(dash=dash, width=2, color=colour),
                hovertemplate=f"{name} %{{text}}<extra></extra>",
            )
        )
    chart_layout(fig, f"{title} — {interval_note(models)}", height)
    fig.update_layout(barmode="group")
    fig.update_xaxes(tickvals=list(range(len(categories))), ticktext=[escape_html(c) for c in categories], title=None)
    fig.update_yaxes(**percent_or_zero(metric, list(frame["value"])))
    return fig


def task_vs_control_figure(
    task: pd.DataFrame,
    control: pd.DataFrame,
    *,
    metric: str,
    title: str,
    height: int = 380,
    twin_of: Callable[[str], str | None] = lambda model: None,
    model_order: Sequence[str] = (),
) -> go.Figure:
    """Per model, the task's per-layer score (solid) and its control task's (dashed, same colour):
    the gap is Hewitt & Liang's selectivity (accuracy) or the control task's extra codelength (MDL). A
    random-weight twin (``twin_of``) has its trained model's colour, its task dotted and its control dash-dotted.

    task, control: model, layer, value[, lo, hi] (``viz.results.layer_curves_frame``)."""
    fig = go.Figure()
    values: list[float] = []
    models = list(dict.fromkeys(list(task["model"]) + list(control["model"])))
    styles = model_styles(models, twin_of, model_order)
    for model in models:  # the legend: a model once (its colour), the line styles once (``line_style_key``)
        colour, twin, named = styles[model]["color"], styles[model]["dash"] != "solid", False
        for frame, what, dash in (
            (task, "task", "dot" if twin else "solid"),
            (control, "control task", "dashdot" if twin else "dash"),
        ):
            part = frame[frame["model"] == model].sort_values("layer")
            if part.empty:
                continue
            label = escape_html(f"{model} — {what}")
            fig.add_trace(
                go.Scatter(
                    x=part["layer"],
                    y=part["value"],
                    name=label if named else escape_html(str(model)),
                    showlegend=not named,
                    mode="lines+markers",
                    legendgroup=escape_html(str(model)),
                    line=dict(color=colour, dash=dash, width=2.5),
                    marker=dict(size=8, color=colour, symbol=styles[model]["symbol"]),
                    error_y=interval_error(part),
                    cliponaxis=False,
                    hovertemplate=f"{label} layer %{{x}}: %{{y:.2f}}<extra></extra>",
                )
            )
            values, named = values + _extent(part), True
    keys = {"task (solid)": "solid", "control task (dashed)": "dash"}
    if any(s["dash"] != "solid" for s in styles.values()):  # a random-weight twin's own two styles
        keys |= {"twin's task (dotted)": "dot", "twin's control (dash-dot)": "dashdot"}
    line_style_key(fig, keys)
    # one note for both: the task's sentences, and the label draws the control's intervals average over
    chart_layout(fig, f"{title} — {interval_note(pd.concat([task, control]))}", height, half=True)  # beside the other
    axis_title, y_range = metric_axis(metric, values)
    fig.update_xaxes(dtick=1, title="layer")
    fig.update_yaxes(title=axis_title, range=y_range)
    return fig
