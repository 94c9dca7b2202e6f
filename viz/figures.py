"""Plotly figure builders for the app (pure: arrays and lists in, ``go.Figure`` out).

Every label that can contain user text is passed through :func:`viz.text.escape_html`, because
plotly renders a subset of HTML in labels and hover text.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.text import escape_html, shorten

PALETTE = px.colors.qualitative.Bold + px.colors.qualitative.Pastel + px.colors.qualitative.Safe
ATTN_SCALE = "Blues"
_FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)


def _layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    fig.update_layout(
        template="plotly_white", font=_FONT, title=dict(text=escape_html(title) if title else None, x=0.0),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10), height=height,
        legend=dict(itemsizing="constant"),
    )
    return fig


def unique_labels(labels: Sequence[str], max_len: int = 70) -> list[str]:
    """Display labels for tokens: escaped, shortened, made unique ("bank", "bank (2)") for axes."""
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        lab = escape_html(shorten(str(lab), max_len))
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} ({seen[lab]})")
    return out


def scatter_points(
    coords: np.ndarray,
    groups: Sequence[str],
    hover: Sequence[str],
    *,
    title: str | None = None,
    highlight: int | None = None,
    group_order: Sequence[str] | None = None,
    height: int = 560,
    text_labels: Sequence[str] | None = None,
    legend_title: str = "sense",
) -> go.Figure:
    """2-D or 3-D scatter of projected vectors, one trace (colour) per group.

    coords: (n, 2|3); groups[i]: legend group of point i (e.g. a WordNet sense); hover[i]:
    plain text shown on hover (escaped here; newlines become line breaks).
    """
    coords = np.asarray(coords)
    n, dims = coords.shape if coords.ndim == 2 else (0, 2)
    if len(groups) != n or len(hover) != n:
        raise ValueError("coords, groups and hover must have the same length")
    order = list(group_order) if group_order else list(dict.fromkeys(groups))
    hover_html = ["<br>".join(escape_html(line) for line in str(h).split("\n")) for h in hover]
    fig = go.Figure()
    for gi, group in enumerate(order):
        idx = [i for i in range(n) if groups[i] == group]
        if not idx:
            continue
        colour = PALETTE[gi % len(PALETTE)]
        common = dict(
            name=escape_html(shorten(group, 60)), mode="markers+text" if text_labels else "markers",
            text=[escape_html(text_labels[i]) for i in idx] if text_labels else None,
            textposition="top center",
            hovertext=[hover_html[i] for i in idx], hoverinfo="text",
            customdata=idx,
        )
        if dims == 3:
            fig.add_trace(go.Scatter3d(x=coords[idx, 0], y=coords[idx, 1], z=coords[idx, 2],
                                       marker=dict(size=5, color=colour, opacity=0.85,
                                                   line=dict(width=0.5, color="white")), **common))
        else:
            fig.add_trace(go.Scatter(x=coords[idx, 0], y=coords[idx, 1],
                                     marker=dict(size=10, color=colour, opacity=0.85,
                                                 line=dict(width=1, color="white")), **common))
    if highlight is not None and 0 <= highlight < n:
        h = highlight
        ring = dict(name="selected", mode="markers", hoverinfo="skip", showlegend=True)
        if dims == 3:
            fig.add_trace(go.Scatter3d(x=[coords[h, 0]], y=[coords[h, 1]], z=[coords[h, 2]],
                                       marker=dict(size=10, color="rgba(0,0,0,0)",
                                                   line=dict(width=3, color="black")), **ring))
        else:
            fig.add_trace(go.Scatter(x=[coords[h, 0]], y=[coords[h, 1]],
                                     marker=dict(size=20, color="rgba(0,0,0,0)", symbol="circle-open",
                                                 line=dict(width=3, color="black")), **ring))
    _layout(fig, title, height)
    if dims == 2:
        fig.update_xaxes(showticklabels=False, zeroline=False, title=None)
        fig.update_yaxes(showticklabels=False, zeroline=False, title=None)
    else:
        axis = dict(showticklabels=False, title="")
        fig.update_layout(scene=dict(xaxis=axis, yaxis=axis, zaxis=axis))
    fig.update_layout(legend=dict(title=dict(text=escape_html(legend_title)), font=dict(size=12),
                                  orientation="v", x=1.01, y=1, xanchor="left", yanchor="top",
                                  bgcolor="rgba(255,255,255,0.8)"))
    return fig


def attention_grid(att: np.ndarray, tokens: Sequence[str] | None = None, *, title: str | None = None,
                   cell_px: int = 70) -> go.Figure:
    """Grid of heatmaps: one row per layer, one column per head.

    att: (layers, heads, n, n), rows (queries) sum to 1. Small multiples without tick labels,
    sharing one colour scale (0..max), so heads with sharp patterns stand out.
    """
    att = np.asarray(att, np.float32)
    if att.ndim != 4:
        raise ValueError(f"Expected (layers, heads, n, n) attention, got shape {att.shape}")
    L, H = att.shape[:2]
    fig = make_subplots(rows=L, cols=H, horizontal_spacing=0.006, vertical_spacing=0.012,
                        row_titles=[f"L{l + 1}" for l in range(L)],
                        column_titles=[f"H{h + 1}" for h in range(H)])
    zmax = float(att.max()) if att.size else 1.0
    labels = unique_labels(tokens, 25) if tokens is not None else None
    if labels is not None and len(labels) != att.shape[-1]:
        raise ValueError(f"{len(labels)} tokens for attention over {att.shape[-1]} positions")
    for l in range(L):
        for h in range(H):
            fig.add_trace(
                go.Heatmap(z=att[l, h], x=labels, y=labels, coloraxis="coloraxis",
                           hovertemplate=f"layer {l + 1}, head {h + 1}<br>query %{{y}} → key %{{x}}"
                                         "<br>weight %{z:.2f}<extra></extra>"),
                row=l + 1, col=h + 1,
            )
    fig.update_xaxes(showticklabels=False, ticks="", showgrid=False)
    fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, autorange="reversed")
    fig.update_layout(coloraxis=dict(colorscale=ATTN_SCALE, cmin=0, cmax=zmax, showscale=False))
    fig.update_annotations(font_size=11)
    return _layout(fig, title, height=max(220, int(L * cell_px * 1.02) + 60))


def attention_heatmap(att: np.ndarray, tokens: Sequence[str], *, title: str | None = None,
                      height: int | None = None) -> go.Figure:
    """One token-to-token heatmap: row = query token, column = key token it attends to."""
    att = np.asarray(att, np.float32)
    n = len(tokens)
    if att.shape != (n, n):
        raise ValueError(f"Attention shape {att.shape} does not match {n} tokens")
    labels = unique_labels(tokens, 25)
    fig = go.Figure(go.Heatmap(
        z=att, x=labels, y=labels, colorscale=ATTN_SCALE, zmin=0, zmax=float(att.max()) if n else 1,
        hovertemplate="%{y} → %{x}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title="weight", thickness=12),
    ))
    fig.update_yaxes(autorange="reversed", title="query (attending)", tickfont=dict(size=11))
    fig.update_xaxes(title="key (attended to)", tickangle=-50, tickfont=dict(size=11), side="bottom")
    size = height or min(900, max(380, 24 * n + 160))
    return _layout(fig, title, size)


def layer_curves(df: pd.DataFrame, *, x: str = "layer", y: str = "score", color: str = "model",
                 title: str | None = None, y_title: str | None = None, height: int = 420) -> go.Figure:
    """Per-layer line chart comparing models (the layer-probe comparison)."""
    fig = px.line(df, x=x, y=y, color=color, markers=True, color_discrete_sequence=PALETTE)
    fig.update_traces(marker=dict(size=9), line=dict(width=2.5))   # a one-layer model is one visible dot
    fig.update_xaxes(dtick=1, title=x)
    fig.update_yaxes(title=y_title or y)
    return _layout(fig, title, height)


def grouped_bars(df: pd.DataFrame, *, x: str, y: str, color: str, title: str | None = None,
                 y_title: str | None = None, height: int = 400) -> go.Figure:
    fig = px.bar(df, x=x, y=y, color=color, barmode="group", color_discrete_sequence=PALETTE)
    fig.update_yaxes(title=y_title or y)
    return _layout(fig, title, height)


#: Fewer test instances than this make a "small slice": its 95% interval is drawn and the title says so.
SMALL_N = 1000
MIN_SPAN = 20.0   # percentage points: a y axis never zooms closer, so noise does not look like a trend


def honest_range(values: Sequence[float], *, min_span: float = MIN_SPAN, bounds: tuple[float, float] = (0, 100)
                 ) -> list[float]:
    """A y range holding every value (and interval bound) that spans at least ``min_span`` points,
    within ``bounds``: a 1-point difference never fills the whole height."""
    vals = [float(v) for v in values if v is not None and np.isfinite(v)]
    if not vals:
        return list(bounds)
    lo, hi = min(vals), max(vals)
    pad = max(1.0, 0.08 * (hi - lo))
    lo, hi = lo - pad, hi + pad
    if hi - lo < min_span:
        mid = (lo + hi) / 2
        lo, hi = mid - min_span / 2, mid + min_span / 2
    if lo < bounds[0]:
        lo, hi = bounds[0], max(hi, bounds[0] + min_span)
    if hi > bounds[1]:
        lo, hi = min(lo, bounds[1] - min_span), bounds[1]
    return [max(bounds[0], lo), min(bounds[1], hi)]


def small_sample_note(curves: pd.DataFrame, small_n: int = SMALL_N) -> str | None:
    """"small slice: n = …" when the smallest evaluation behind the curves has fewer than ``small_n``."""
    n = pd.to_numeric(curves.get("n"), errors="coerce").dropna() if "n" in curves else pd.Series(dtype=float)
    if n.empty or n.min() >= small_n:
        return None
    low, high = int(n.min()), int(n.max())
    return f"small slice: n = {low if low == high else f'{low}–{high}'}"


def layer_probe_figure(curves: pd.DataFrame, base: pd.DataFrame | None = None, *, title: str,
                       y_title: str, height: int = 440, small_n: int = SMALL_N) -> go.Figure:
    """Per-layer scores of each model, with their 95% intervals (``lo``/``hi``) as error bars, and
    each baseline as its own dashed series (a line across every layer, in the legend).

    curves: model, layer, value[, n, lo, hi]; base: label, value[, lo, hi] (``viz.results``).
    The y axis spans at least :data:`MIN_SPAN` points; a slice with fewer than ``small_n`` test
    instances says so in the title.
    """
    fig = go.Figure()
    layers = sorted(set(int(x) for x in curves["layer"])) or [0]
    x0, x1 = layers[0] - 0.25, layers[-1] + 0.25
    bounds: list[float] = []
    for i, (model, part) in enumerate(curves.groupby("model", sort=False)):
        part = part.sort_values("layer")
        has_ci = {"lo", "hi"} <= set(part) and part[["lo", "hi"]].notna().all().all()
        error = dict(type="data", array=(part["hi"] - part["value"]).clip(lower=0),
                     arrayminus=(part["value"] - part["lo"]).clip(lower=0), thickness=1.2, width=4) if has_ci else None
        fig.add_trace(go.Scatter(
            x=part["layer"], y=part["value"], name=escape_html(str(model)), mode="lines+markers",
            marker=dict(size=9, color=PALETTE[i % len(PALETTE)]), line=dict(width=2.5, color=PALETTE[i % len(PALETTE)]),
            error_y=error, customdata=part[["n"]] if "n" in part else None,
            hovertemplate=f"{escape_html(str(model))} layer %{{x}}: %{{y:.2f}}"
                          + (" (n = %{customdata[0]})" if "n" in part else "") + "<extra></extra>"))
        bounds += list(part["value"]) + (list(part["lo"]) + list(part["hi"]) if has_ci else [])
    for _, row in (base if base is not None else pd.DataFrame()).iterrows():
        label = escape_html(f"{row['label']} (baseline)")
        fig.add_trace(go.Scatter(x=[x0, x1], y=[row["value"]] * 2, name=label, mode="lines",
                                 line=dict(dash="dash", width=2, color="#555"), legendgroup="baselines",
                                 hovertemplate=f"{label}: {row['value']:.2f}<extra></extra>"))
        bounds.append(row["value"])
        if pd.notna(row.get("lo")) and pd.notna(row.get("hi")):
            fig.add_trace(go.Scatter(x=[x0, x1, x1, x0], y=[row["lo"], row["lo"], row["hi"], row["hi"]],
                                     fill="toself", fillcolor="rgba(85,85,85,0.12)", line=dict(width=0),
                                     mode="lines", hoverinfo="skip", showlegend=False, legendgroup="baselines"))
            bounds += [row["lo"], row["hi"]]
    note = small_sample_note(curves, small_n)
    has_ci = {"lo", "hi"} <= set(curves) and bool(curves[["lo", "hi"]].notna().all(axis=None))
    full_title = f"{title} — {note}, {'95% intervals' if has_ci else 'no intervals recorded'}" if note else title
    _layout(fig, full_title, height)
    fig.update_xaxes(dtick=1, title="layer", range=[x0 - 0.1, x1 + 0.1])
    fig.update_yaxes(title=y_title, range=honest_range(bounds))
    return fig
