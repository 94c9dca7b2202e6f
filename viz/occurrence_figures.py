"""Figures of the Polysemy explorer and Embedding space: occurrences, per-layer measures, corpus hits.

Pure (arrays and lists in, ``go.Figure`` out), light (one trace per legend group, no per-point
styling arrays the browser must re-layout) and truthful:

- **Collapsed points** (:func:`occurrence_scatter`): occurrences that share one vector (a static
  model) are drawn as ONE marker with its count ("×37"), coloured by their sense only when they share
  it ("several senses" otherwise); a single distinct point sits at the centre of a fixed ±1 frame
  instead of an axis auto-scaled to float noise.
- **The selected occurrence** is a black open ring drawn on top, with a visible legend swatch.
- **Search / isolate**: matched points are drawn larger with a dark outline; ``isolate`` hides the rest.
- **Neighbours** of the selected point (``related``, found in the full space) get an open diamond;
  ``labels`` writes a text label beside each point; ``webgl`` (automatic from
  :data:`WEBGL_MIN_POINTS` points, 2-D) draws with ``go.Scattergl``, so 5,000+ points stay interactive.

User text (labels, hover) is escaped here: plotly renders a subset of HTML.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.figures import (
    HALF_TITLE_CHARS,
    LEGEND_ROW_PX,
    PALETTE,
    SYMBOLS,
    SYMBOLS_3D,
    _layout,
    legend_below as legend_below_plot,  # ``legend_below`` is this module's flag
)
from viz.probe_figures import interval_error
from viz.text import escape_html, legend_label, shorten

MIXED = "several senses"
RING = "black"
WEBGL_MIN_POINTS = 2500  # SVG draws one element per point: beyond a few thousand, pan and hover stutter


def _hover_html(text: str) -> str:
    return "<br>".join(escape_html(line) for line in str(text).split("\n"))


def occurrence_scatter(
    coords: np.ndarray,
    groups: Sequence[str],
    hover: Sequence[str],
    *,
    inverse: np.ndarray | None = None,
    highlight: int | None = None,
    matched: np.ndarray | None = None,
    isolate: bool = False,
    title: str | None = None,
    subtitle: str | None = None,
    legend_title: str = "sense",
    height: int = 520,
    legend_below: bool = False,
    labels: Sequence[str] | None = None,
    related: Sequence[int] = (),
    webgl: bool | None = None,
) -> go.Figure:
    """Scatter of occurrences (coords (n, 2|3)), one trace per group.

    inverse: (n,) distinct-point id of every occurrence (``viz.points.collapse``); occurrences with
    the same id are drawn as one marker with their count. highlight: the selected occurrence (ringed).
    matched: (n,) bool of search hits (emphasised; with ``isolate`` only they are drawn).
    labels: (n,) text beside each point ("" for none). related: occurrences marked as the highlighted
    one's neighbours. webgl: draw 2-D points with WebGL (default: from ``WEBGL_MIN_POINTS`` points).
    subtitle: the title's second part ("PCA (37 occurrences)"), after " · " on a wide plot; ``legend_below`` (a
    narrow panel beside another): the title in lines that fit a 1024-px window, the legend's lines shorter.
    """
    coords = np.asarray(coords, np.float64)
    n = coords.shape[0]
    dims = coords.shape[1] if coords.ndim == 2 and n else 2
    if len(groups) != n or len(hover) != n:
        raise ValueError("coords, groups and hover must have the same length")
    inverse = np.arange(n) if inverse is None else np.asarray(inverse)
    matched = np.zeros(n, bool) if matched is None else np.asarray(matched, bool)
    shown = matched if isolate and matched.any() else np.ones(n, bool)
    points, by_group = _distinct_points(np.flatnonzero(shown), inverse, groups)
    collapsed = any(len(m) > 1 for m in points.values())

    fig = go.Figure()
    if webgl is None:
        webgl = n >= WEBGL_MIN_POINTS
    trace_cls = go.Scatter3d if dims == 3 else (go.Scattergl if webgl else go.Scatter)
    order = list(dict.fromkeys(groups))
    for gi, group in enumerate(order + ([MIXED] if MIXED in by_group and MIXED not in order else [])):
        if by_group.get(group):
            style = _GroupStyle(gi, dims, collapsed, 38 if legend_below else 45)
            fig.add_trace(
                _group_trace(trace_cls, coords, group, by_group[group], groups, hover, matched, labels, style)
            )

    def at(rows: list[int]) -> dict:
        return dict(x=coords[rows, 0], y=coords[rows, 1]) | ({"z": coords[rows, 2]} if dims == 3 else {})

    near = list(dict.fromkeys(points[int(inverse[j])][0] for j in related if 0 <= j < n and shown[j]))
    if near:
        ring = dict(size=16 if dims == 2 else 8, symbol="diamond-open", color=RING, line=dict(width=2))
        fig.add_trace(trace_cls(**at(near), name="nearest (full space)", mode="markers", hoverinfo="skip", marker=ring))
    if highlight is not None and 0 <= highlight < n and shown[highlight]:
        rep = points[int(inverse[int(highlight)])][0]
        ring = dict(size=22 if dims == 2 else 12, symbol="circle-open", color=RING, line=dict(width=3, color=RING))
        fig.add_trace(
            trace_cls(
                **{k: v.tolist() for k, v in at([rep]).items()},
                name="selected",
                mode="markers",
                hoverinfo="skip",
                showlegend=True,
                marker=ring,
            )
        )
    return _scatter_frame(fig, dims, len(points), title, subtitle, height, legend_title, legend_below)


def _distinct_points(
    shown: np.ndarray, inverse: np.ndarray, groups: Sequence[str]
) -> tuple[dict[int, list[int]], dict[str, list[tuple[int, list[int]]]]]:
    """The shown occurrences as distinct points (point id -> its occurrences) and each group's points (a point
    whose occurrences have several senses is ``MIXED``)."""
    points: dict[int, list[int]] = {}
    for i in shown:
        points.setdefault(int(inverse[i]), []).append(int(i))
    by_group: dict[str, list[tuple[int, list[int]]]] = {}
    for pid, members in points.items():
        senses = Counter(groups[i] for i in members)
        group = next(iter(senses)) if len(senses) == 1 else MIXED
        by_group.setdefault(group, []).append((pid, members))
    return points, by_group


@dataclass(frozen=True)
class _GroupStyle:
    """How one group's trace looks: its slot (colour and symbol), 2-D or 3-D, whether points are collapsed (sized
    by count), the legend label's width."""

    slot: int
    dims: int
    collapsed: bool
    label_chars: int


def _group_trace(
    trace_cls,
    coords: np.ndarray,
    group: str,
    items: list[tuple[int, list[int]]],
    groups: Sequence[str],
    hover: Sequence[str],
    matched: np.ndarray,
    labels: Sequence[str] | None,
    style: _GroupStyle,
):
    """One group's markers: a marker per distinct point (its first occurrence's coordinates), sized by count when
    points are collapsed and larger when a search matched it."""
    dims, collapsed = style.dims, style.collapsed
    reps = [m[0] for _, m in items]
    counts = [len(m) for _, m in items]
    hov = []
    for _, m in items:
        if len(m) == 1:
            hov.append(_hover_html(hover[m[0]]))
        else:
            mix = Counter(groups[i] for i in m).most_common(6)
            lines = [f"{len(m)} occurrences share this vector:"] + [f"{c} × {shorten(g, 60)}" for g, c in mix]
            hov.append(_hover_html("\n".join(lines)))
    hit = [bool(matched[r]) for r in reps]
    base = 10 if dims == 2 else 5
    size = [base * (np.sqrt(c) if collapsed else 1.0) * (1.5 if h else 1.0) for c, h in zip(counts, hit)]
    colour = "#888888" if group == MIXED else PALETTE[style.slot % len(PALETTE)]
    # a symbol per sense beside its colour (two senses' hues merge for a colour-blind reader); 3-D has five
    symbols = SYMBOLS if dims == 2 else SYMBOLS_3D
    symbol = "circle" if group == MIXED else symbols[style.slot % len(symbols)]
    if dims == 2 and any(hit):
        # Numbers on a two-colour scale, not one colour string per point: plotly checks every colour
        # string, which for 5,000 points takes seconds.
        line = dict(
            width=np.where(hit, 2.5, 1.0),
            color=np.asarray(hit, float),
            colorscale=[[0, "white"], [1, "#222222"]],
            cmin=0,
            cmax=1,
        )
    elif dims == 2:
        line = dict(width=1, color="white")
    else:  # scatter3d takes one line width per trace: matches stand out by size only
        line = dict(width=0.5, color="white")
    marker = dict(size=np.minimum(size, 48), color=colour, symbol=symbol, opacity=0.85, line=line)
    xyz = dict(x=coords[reps, 0], y=coords[reps, 1]) | ({"z": coords[reps, 2]} if dims == 3 else {})
    label = legend_label(group, style.label_chars) + (f" ({sum(counts)})" if collapsed else "")
    text = [f"×{c}" if c > 1 else "" for c in counts] if collapsed else None
    if labels is not None:
        text = [" ".join(filter(None, (escape_html(labels[r]), t))) for r, t in zip(reps, text or [""] * len(reps))]
    return trace_cls(
        **xyz,
        name=label,
        mode="markers+text" if text is not None else "markers",
        text=text,
        textposition="top center",
        hovertext=hov,
        hoverinfo="text",
        customdata=reps,
        marker=marker,
    )


def _scatter_frame(
    fig: go.Figure,
    dims: int,
    distinct: int,
    title: str | None,
    subtitle: str | None,
    height: int,
    legend_title: str,
    legend_below: bool,
) -> go.Figure:
    """Title, bare axes (a projection's axes mean nothing; in 2-D, equal scales) and the legend, beside the plot or
    below it."""
    if legend_below and title and subtitle:  # a half-width chart: headline and a smaller line, each wrapped
        _layout(fig, title, height, subtitle, HALF_TITLE_CHARS)
    else:
        _layout(fig, title if subtitle is None else f"{title} · {subtitle}", height)
    if dims == 2:
        fig.update_xaxes(showticklabels=False, zeroline=False, title=None)
        # one unit is as long across as up: with bare axes, an axis scaled to its own spread drew float noise
        # (±3.5e-6 against ±2.3 across) as far-apart groups
        fig.update_yaxes(showticklabels=False, zeroline=False, title=None, scaleanchor="x", scaleratio=1)
        if distinct <= 1:  # one spot: a fixed frame, never an axis scaled to float noise
            fig.update_xaxes(range=[-1, 1])
            fig.update_yaxes(range=[-1, 1])
    else:
        axis = dict(showticklabels=False, title="")
        fig.update_layout(scene=dict(xaxis=axis, yaxis=axis, zaxis=axis))
    where = dict(orientation="v", x=1.01, y=1, xanchor="left", yanchor="top")
    if legend_below:  # narrow side-by-side panels: rows under the plot, the figure taller by them (and its title's)
        where, rows = legend_below_plot(fig, half=True, extra_rows=1)
        fig.update_layout(height=height + LEGEND_ROW_PX * rows)
    fig.update_layout(
        legend=dict(
            title=dict(text=escape_html(legend_title)), font=dict(size=12), bgcolor="rgba(255,255,255,0.8)", **where
        )
    )
    return fig


def layer_measures_figure(
    df: pd.DataFrame, *, title: str | None = None, subtitle: str | None = None, height: int = 340
) -> go.Figure:
    """Per-layer lines (long frame: layer, measure, value[, lo, hi]), every measure on one 0–1 axis; a measure with
    ``lo``/``hi`` has them as error bars; chance ("… chance") is a baseline: grey, dashed, no markers."""
    fig = go.Figure()
    looks = itertools.cycle(zip(PALETTE, SYMBOLS))  # as many measures as asked: the looks come round again
    drawn = 0
    for measure, part in df.groupby("measure", sort=False):
        name = escape_html(str(measure))
        if str(measure).endswith("chance"):
            style = dict(mode="lines", name=f"{name} (baseline)", line=dict(color="#555", dash="dash", width=2))
        else:
            colour, symbol = next(looks)  # a marker each beside its colour: two of them merge for a colour-blind reader
            # each later measure thinner and smaller, drawn over the earlier: two near-equal curves (self-similarity
            # and explainable variance, 0.001 apart) read as two, where the second had hidden the first
            width, size = max(1.5, 5.0 - 1.5 * drawn), max(6, 13 - 3 * drawn)
            style = dict(
                mode="lines+markers",
                name=name,
                line=dict(color=colour, width=width),
                marker=dict(size=size, symbol=symbol),
            )
            drawn += 1
        fig.add_trace(
            go.Scatter(
                x=part["layer"],
                y=part["value"],
                error_y=interval_error(part),
                hovertemplate=f"{name}, layer %{{x}}: %{{y:.2f}}<extra></extra>",
                **style,
            )
        )
    _layout(fig, title, height, subtitle)
    fig.update_xaxes(dtick=1, title="layer")
    fig.update_yaxes(title="value (0–1)", range=[-0.02, 1.02])
    return fig


def hit_histograms(
    df: pd.DataFrame,
    columns: Sequence[str] = ("sense", "POS"),
    top: int = 8,
    height: int = 300,
    *,
    title: str | None = None,
    subtitle: str | None = None,
) -> go.Figure:
    """Horizontal bars: how many corpus hits have each value of ``columns`` (top values, rest pooled); labels
    shortened to 45 characters (the hits' table and CSV have them whole)."""
    cols = [c for c in columns if c in df.columns]
    fig = make_subplots(
        rows=1, cols=max(1, len(cols)), subplot_titles=[escape_html(c) for c in cols], horizontal_spacing=0.25
    )
    for ci, col in enumerate(cols):
        counts = df[col].astype(str).value_counts()
        if len(counts) > top:
            counts = pd.concat([counts.iloc[: top - 1], pd.Series({"(other)": int(counts.iloc[top - 1 :].sum())})])
        counts = counts.iloc[::-1]
        fig.add_trace(
            go.Bar(
                x=counts.values,
                y=[escape_html(shorten(v, 45)) for v in counts.index],
                orientation="h",
                marker_color=PALETTE[ci],
                name=escape_html(col),
                showlegend=False,
                hovertemplate="%{y}: %{x} hits<extra></extra>",
            ),
            row=1,
            col=ci + 1,
        )
        fig.update_xaxes(title="hits", rangemode="tozero", row=1, col=ci + 1)
    return _layout(fig, title, height, subtitle)
