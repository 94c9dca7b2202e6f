"""The Layer profile view's pure logic: which measures can be profiled, and its figures.

    choices = profile_choices(df)                                # [(probe, dataset, metric), …] with layer rows
    prof = layer_profile(df, *choices[0], models)                # probes.stats.profiles: depth = layer / last layer
    fig = profile_figure(prof, title=…, y_title="accuracy")      # one line per model against relative depth
    fig = cka_heatmap(M, ["0", "1", "2"], ["0", …, "6"], title=…)

Charts tell the truth: every model is its own series against *relative* depth (0 = layer 0, 1 = the top
layer), the hover names the real layer, a model measured at one layer only is a single dot, and bootstrap
intervals (``lo``/``hi``) are drawn where the results have them. Random-weight models (``random:NAME@SEED``)
are drawn dashed, as the baselines they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from probes.estimators.contextuality import METRICS as CONTEXTUALITY_METRICS
from probes.registry import all_probes
from probes.tasks.contextuality import NAME as CONTEXTUALITY
from viz.axes import metric_axis
from viz.contrast import cell_label_colours
from viz.figures import _layout, chart_layout, model_styles
from viz.probe_figures import SMALL_N, baseline_line, interval_error, interval_note, small_sample_note
from viz.text import escape_html

#: metrics shown as profiles (a probe's first metric is its headline one)
SKIPPED_METRICS = {"P", "R"}


def profile_choices(df: pd.DataFrame, probe_filter: str | None = None) -> list[tuple[str, str, str]]:
    """(probe, dataset, metric) combinations with numbered-layer rows from at least one model with 2+ layers.

    ``probe_filter``: only this probe; otherwise contextuality is left out (it has its own section). Rows of a
    breakdown an earlier version wrote (``ChartSpec.breakdown_retired``: WSD per POS on ALL) are not offered.
    """
    if df.empty:
        return []
    sel = df[df["layer"].astype(str).str.fullmatch(r"\d+") & ~df["metric"].isin(SKIPPED_METRICS)]
    sel = sel[sel["probe"] == probe_filter] if probe_filter else sel[sel["probe"] != CONTEXTUALITY]
    retired = {spec.name: spec.chart.breakdown_retired for spec in all_probes()}
    kept = [not str(d).startswith(retired.get(p, ())) for p, d in zip(sel["probe"], sel["dataset"])]
    sel = sel[pd.Series(kept, index=sel.index, dtype=bool)]  # a mask even when empty (a bare [] selects columns)
    layered = sel.groupby(["probe", "dataset", "metric", "model"])["layer"].nunique()
    keys = layered[layered > 1].reset_index()[["probe", "dataset", "metric"]].drop_duplicates()
    return [tuple(k) for k in keys.itertuples(index=False)]


def choice_label(choice: tuple[str, str, str]) -> str:
    probe, dataset, metric = choice
    return f"{probe} · {dataset} · {metric}"


def contextuality_metrics(df: pd.DataFrame) -> list[str]:
    """Contextuality metrics present, adjusted ones first (the ones Ethayarajh reads)."""
    present = set(df.loc[df["probe"] == CONTEXTUALITY, "metric"]) if not df.empty else set()
    order = [m for m in CONTEXTUALITY_METRICS if m.endswith("_adj")] + [
        m for m in CONTEXTUALITY_METRICS if not m.endswith("_adj")
    ]
    return [m for m in order if m in present]


def profile_figure(
    profile: pd.DataFrame,
    *,
    title: str,
    y_title: str,
    base: pd.DataFrame | None = None,
    y_range: tuple[float, float] | None = None,
    height: int = 440,
    twin_of: Callable[[str], str | None] = lambda model: None,
    model_order: Sequence[str] = (),
    metric: str | None = None,
    small_n: int = SMALL_N,
) -> go.Figure:
    """Value against relative depth, one line per model (``probes.stats.profiles.layer_profile`` columns), each
    baseline (``base``: label, value, as ``viz.results.baseline_frame``) a dashed series of its own across the depths.

    The y axis: ``y_range`` (a probe's fixed one: cosines, CKA), else ``metric``'s (default: ``y_title`` read as the
    metric) unit and bounds spanning at least ``viz.axes.MIN_SPAN`` points, as on the Probes page; a ``y_title``
    other than ``metric`` (a probe's own axis title) is the axis title. Drawn at half width: the title in two parts
    (``title``'s part before " (", then the rest with what the error bars are and, under ``small_n`` units
    (``ChartSpec.small_n``), "small sample"), each wrapped to fit, the legend under the plot
    (``viz.figures.chart_layout(half=True)``).
    twin_of: a random-weight twin's trained model, drawn dotted in that model's colour (``viz.figures.model_styles``;
    the app passes ``models.random_init.twin_base``: viz imports no models).
    """
    fig = go.Figure()
    styles = model_styles(list(dict.fromkeys(profile["model"])), twin_of, model_order)
    for model, part in profile.groupby("model", sort=False):
        part = part.sort_values("depth")
        color = styles[model]["color"]
        error = interval_error(part)
        hover = [
            f"{escape_html(model)}<br>layer {layer} of {top} (depth {d:.2f})<br>{y_title}: {v:.3f}"
            for layer, top, d, v in zip(part["layer"], part["layers"], part["depth"], part["value"], strict=True)
        ]
        fig.add_trace(
            go.Scatter(
                x=part["depth"],
                y=part["value"],
                mode="lines+markers",
                name=escape_html(model),
                line=dict(color=color, width=2.5, dash=styles[model]["dash"]),
                marker=dict(size=9, symbol=styles[model]["symbol"]),
                error_y=error,
                hovertext=hover,
                hoverinfo="text",
            )
        )
    for k, (_, row) in enumerate((base if base is not None else pd.DataFrame()).iterrows()):
        fig.add_trace(baseline_line(row, [0.0, 1.0], k, two_lines=True))  # a half-width legend column holds it whole
    # "Self-similarity (lower = more context-specific)": the aside becomes a note; a name with brackets inside
    # ("…:feats:Number (not _) · accuracy") is not split
    head, _, aside = title.rpartition(" (") if title.endswith(")") else (title, "", "")
    if " · " in aside:
        head, aside = title, ""
    notes = [aside.removesuffix(")")] if aside else []
    notes.append(interval_note(profile.dropna(subset=["lo", "hi"])))
    if small := small_sample_note(profile, small_n):  # as the Probes page's chart says it
        notes.append(small)
    chart_layout(fig, f"{head} — {'; '.join(notes)}", height, half=True)  # drawn beside another
    fig.update_xaxes(title="relative depth (layer / top layer)", range=[-0.05, 1.05], dtick=0.25)
    if y_range is None:  # the metric's unit and bounds, never zoomed into noise (``viz.axes.metric_axis``)
        values = [*profile["value"], *profile["lo"].dropna(), *profile["hi"].dropna()]
        values += [] if base is None else list(base["value"].dropna())
        unit_title, y_range = metric_axis(metric or y_title, values)
        y_title = y_title if metric and y_title != metric else unit_title  # a probe's own axis title wins
    fig.update_yaxes(title=escape_html(y_title), range=list(y_range))
    return fig


SMALL_LABELS_FROM = 7  # columns from which a cell's value is written smaller
MAX_LABELLED = 12  # columns beyond which cells carry no written value (hover has it)


def _cell_label(value: float) -> str:
    """ "1.00", ".94", "" for a missing value: two decimals, no leading zero (narrow cells)."""
    return "" if not np.isfinite(value) else f"{value:.2f}".removeprefix("0")


def cka_heatmap(
    matrix: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    *,
    title: str,
    row_title: str = "layer",
    col_title: str = "layer",
    height: int = 420,
) -> go.Figure:
    """A CKA matrix (values in [0, 1]) as a heatmap with each cell's value written in it: ".94" (no leading zero),
    smaller from ``SMALL_LABELS_FROM`` columns and left to the hover past ``MAX_LABELLED`` — MiniLM's 7 columns in a
    third of the page ran "1.000.940.89…" together."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.shape != (len(rows), len(cols)):
        raise ValueError(f"CKA matrix of shape {matrix.shape} for {len(rows)} × {len(cols)} labels.")
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=[escape_html(c) for c in cols],
            y=[escape_html(r) for r in rows],
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            colorbar=dict(title="CKA"),
            hovertemplate=f"{escape_html(row_title)} %{{y}} × {escape_html(col_title)} %{{x}}: "
            "CKA %{z:.3f}<extra></extra>",
        )
    )
    xs, ys = np.meshgrid(fig.data[0].x, fig.data[0].y)
    fig.add_trace(  # each cell's value, in black or white as reads best on its colour
        go.Scatter(
            x=xs.ravel(),
            y=ys.ravel(),
            mode="text",
            text=[_cell_label(v) if len(cols) <= MAX_LABELLED else "" for v in matrix.ravel()],
            textfont=dict(
                color=cell_label_colours(matrix, "Viridis", 0, 1).ravel().tolist(),
                size=12 if len(cols) < SMALL_LABELS_FROM else 10,
            ),
            hoverinfo="skip",
            showlegend=False,
            name="values",
        )
    )
    fig.update_xaxes(title=escape_html(col_title), type="category")
    fig.update_yaxes(title=escape_html(row_title), type="category", autorange="reversed")
    return _layout(fig, title, height)


def summary_frame(cog: pd.DataFrame, expected: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per model: centre of gravity (layers, depth) and, where the mix probe ran, the expected layer
    per task (columns ``expected layer (TASK)``)."""
    out = cog.rename(
        columns={"layers": "top layer", "centre_of_gravity": "centre of gravity", "depth": "centre of gravity (depth)"}
    )
    if expected is not None and not expected.empty:
        wide = expected.pivot_table(index="model", columns="task", values="expected_layer", aggfunc="last")
        wide.columns = [f"expected layer ({t})" for t in wide.columns]
        out = out.merge(wide.reset_index(), on="model", how="left")
    return out
