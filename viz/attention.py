"""Attention maps for the Attention page: summaries and the figures of the head explorer.

att arrays are (layers, heads, n, n) with rows (queries) summing to 1.

- :func:`grid_figure` — all heads in one clickable image (one heatmap trace of the
  :func:`mosaic`, one transparent marker per head to click), the selected head outlined;
- :func:`line_view` — bertviz's head view (``viz.attention_lines``, re-exported here): focus, threshold,
  several heads in their own colours;
- :func:`query_key_figure` — the selected token's q·k/√d with every key (recovered exactly, up to
  the row's constant, from the softmax) beside the weight each becomes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import get_colorscale

from viz.attention_lines import line_view  # noqa: F401 (re-exported)
from viz.text import escape_html, shorten
from viz.titles import title_below_toolbar, two_line_title

# The explorer's figures are rebuilt on every click: built without plotly's property validation
# (``_validate=False``: ~2 ms instead of ~100 ms a figure), so every value is given in its full
# form (titles as dict(text=…)); tests/test_attention_views.py checks what they draw.
FAST = {"_validate": False}
TEMPLATE = pio.templates["plotly_white"]
BLUES = get_colorscale("Blues")  # plotly.js's own "Blues" runs the other way: the full scale, as validated


def check_attention(att: np.ndarray) -> np.ndarray:
    att = np.asarray(att, np.float32)
    if att.ndim != 4 or att.shape[-1] != att.shape[-2]:
        raise ValueError(f"Expected (layers, heads, n, n) attention, got shape {att.shape}")
    return att


def head_entropy(att: np.ndarray) -> np.ndarray:
    """(layers, heads) mean entropy (bits) of each head's attention rows.

    Low entropy = a focused head (e.g. attends to the previous word); high = spread out.
    The maximum is log2(n) for uniform attention.
    """
    att = check_attention(att)
    p = np.clip(att, 1e-12, 1.0)
    return -(att * np.log2(p)).sum(-1).mean(-1)


def entropy_figure(att: np.ndarray, model: str) -> go.Figure:
    """Each head's mean attention entropy (bits): low = a focused head."""
    L, H = att.shape[:2]
    fig = go.Figure(
        go.Heatmap(
            z=head_entropy(att),
            x=[f"H{h + 1}" for h in range(H)],
            y=[f"L{layer + 1}" for layer in range(L)],
            colorscale="Viridis",
            colorbar=dict(title="bits", thickness=12),
            hovertemplate="%{y} %{x}: %{z:.2f} bits<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        template="plotly_white",
        height=60 + 34 * L,
        margin=dict(l=10, r=10, t=40, b=10),
        title=dict(text=f"Mean attention entropy per head, {escape_html(model)}", x=0),
    )
    return fig


def mean_over_heads(att: np.ndarray, layer: int | None = None) -> np.ndarray:
    """(n, n) attention averaged over the heads of ``layer`` (0-based), or over all layers and heads."""
    att = check_attention(att)
    if layer is None:
        return att.mean(axis=(0, 1))
    if not 0 <= layer < att.shape[0]:
        raise IndexError(f"Layer {layer + 1} is out of range 1..{att.shape[0]}.")
    return att[layer].mean(axis=0)


def strongest_links(att2d: np.ndarray, tokens: list[str], k: int = 10, skip_self: bool = True) -> pd.DataFrame:
    """The k largest query → key weights of a (n, n) map, as a table."""
    a = np.array(att2d, np.float32, copy=True)
    n = len(tokens)
    if a.shape != (n, n):
        raise ValueError(f"Attention shape {a.shape} does not match {n} tokens")
    if skip_self:
        np.fill_diagonal(a, -1.0)
    flat = np.argsort(-a, axis=None, kind="stable")[: min(k, n * n)]
    rows = []
    for f in flat:
        i, j = divmod(int(f), n)
        if a[i, j] < 0:
            continue
        rows.append(
            {
                "query": tokens[i],
                "key": tokens[j],
                "weight": round(float(a[i, j]), 4),
                "query position": i + 1,
                "key position": j + 1,
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- figures


def mosaic(att: np.ndarray, gap: int = 1) -> np.ndarray:
    """Every head's (n, n) map tiled into one (L·(n+gap)−gap, H·(n+gap)−gap) image, NaN between tiles.

    One heatmap trace draws all L × H heads at once (a grid of L × H subplots is L × H traces, seconds
    to draw); tile (l, h) starts at row l·(n+gap), column h·(n+gap).
    """
    att = check_attention(att)
    L, H, n, _ = att.shape
    step = n + gap
    z = np.full((L * step - gap, H * step - gap), np.nan, np.float32)
    for li in range(L):
        for h in range(H):
            z[li * step : li * step + n, h * step : h * step + n] = att[li, h]
    return z


def grid_figure(
    att: np.ndarray,
    selected: tuple[int, int] | None = None,
    *,
    height: int | None = None,
    title: str | None = None,
    subtitle: str | None = None,
) -> go.Figure:
    """All heads as one clickable image: rows = layers (top = layer 1), columns = heads.

    A transparent square marker sits on each tile (customdata = [layer, head], 1-based), so a click
    selects that head (``st.plotly_chart(on_select=…, selection_mode="points")``); the selected head
    (1-based) is outlined. ``height``: without a title (default: ~48 px a layer); a ``title`` (so that a
    downloaded image says what it is; a ``subtitle`` as a smaller line below it) goes below the toolbar and the
    figure grows by its room, so the tiles and their click targets keep their size.
    """
    att = check_attention(att)
    L, H, n, _ = att.shape
    step, gap = n + 1, 1
    z = mosaic(att, gap)
    height = height or int(min(640, max(220, 48 * L + 50)))
    cell_px = max(12, (height - 50) / L * 0.92)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            colorscale=BLUES,
            zmin=0,
            zmax=float(np.nanmax(z)) if z.size else 1,
            showscale=False,
            hoverinfo="skip",
            **FAST,
        ),
        **FAST,
    )
    ls, hs = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    centre = (n - 1) / 2
    fig.add_trace(
        go.Scatter(
            x=(hs.ravel() * step + centre),
            y=(ls.ravel() * step + centre),
            mode="markers",
            showlegend=False,
            marker=dict(symbol="square", size=cell_px, color="rgba(0,0,0,0)"),
            selected=dict(marker=dict(opacity=1)),
            unselected=dict(marker=dict(opacity=1)),
            customdata=np.stack([ls.ravel() + 1, hs.ravel() + 1], -1),
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}: click to open<extra></extra>",
            **FAST,
        )
    )
    if selected is not None:
        li, h = selected[0] - 1, selected[1] - 1
        fig.add_shape(
            type="rect",
            x0=h * step - 0.9,
            x1=h * step + n - 0.1,
            y0=li * step - 0.9,
            y1=li * step + n - 0.1,
            line=dict(color="#d62728", width=3),
        )
    fig.update_xaxes(
        tickvals=[h * step + centre for h in range(H)],
        ticktext=[f"H{h + 1}" for h in range(H)],
        showgrid=False,
        zeroline=False,
        range=[-1, H * step - gap],
        fixedrange=True,
    )
    fig.update_yaxes(
        tickvals=[li * step + centre for li in range(L)],
        ticktext=[f"L{li + 1}" for li in range(L)],
        showgrid=False,
        zeroline=False,
        range=[L * step - gap, -1],
        fixedrange=True,
    )
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        margin=dict(l=10, r=10, t=28, b=10),
        dragmode=False,
        hovermode="closest",
        clickmode="event+select",
    )
    if title:
        text = two_line_title(title, subtitle) if subtitle else escape_html(title)
        fig.update_layout(title=dict(text=text, x=0.0))
        title_below_toolbar(fig)
        fig.update_layout(height=height + fig.layout.margin.t - 28)
    return fig


def query_key_scores(att2d: np.ndarray, query: int) -> np.ndarray:
    """The query's scaled dot products q·k/√d with every key, up to the row's constant, recovered from
    the softmax: log aᵢⱼ − mean over the keys it may see of log aᵢⱼ (softmax ignores a row's constant,
    so these are exact differences). Keys it cannot see (a causal model's future: weight 0) are NaN."""
    row = np.asarray(att2d, np.float64)[query]
    seen = row > 0
    scores = np.full(row.shape, np.nan)
    scores[seen] = np.log(row[seen])
    scores[seen] -= scores[seen].mean()
    return scores


def aligned_ranges(values: np.ndarray, top: float = 1.05) -> tuple[list[float], list[float]]:
    """Ranges of two y axes whose zeros sit at the same height: the left holds ``values`` (and 0), the
    right runs to ``top`` above its zero (the weights, 0..1) and as far below as the left's negatives."""
    finite = values[np.isfinite(values)]
    lo, hi = min(float(finite.min(initial=0.0)), 0.0), max(float(finite.max(initial=0.0)), 0.0)
    pad = max(0.08 * (hi - lo), 0.1)
    lo, hi = lo - pad if lo < 0 else 0.0, hi + pad
    below = -lo / hi  # the part of the axis under its zero, relative to the part above
    return [lo, hi], [-top * below, top]


def query_key_figure(att2d: np.ndarray, tokens: Sequence[str], query: int, *, title: str | None = None) -> go.Figure:
    """The selected token's q·k/√d with every key (bars, centred) and the softmax weight it becomes (dots),
    the two y axes' zeros on one line (:func:`aligned_ranges`)."""
    scores = query_key_scores(att2d, query)
    score_range, weight_range = aligned_ranges(scores)
    labels = [escape_html(shorten(str(t), 20)) for t in tokens]
    weights = np.asarray(att2d, np.float64)[query]
    fig = go.Figure(**FAST)
    keys = np.arange(len(tokens))
    for name, colour, shown in (
        ("q·k/√d (centred)", "#7f7f7f", keys != query),
        ("the query itself", "#d62728", keys == query),
    ):
        fig.add_trace(  # the query's own key a series of its own, so each legend swatch has its bars' colour
            go.Bar(
                x=keys[shown].tolist(),
                y=scores[shown],
                name=name,
                marker=dict(color=colour),
                customdata=[labels[i] for i in keys[shown]],
                hovertemplate="key %{customdata}: %{y:.2f}<extra></extra>",
                **FAST,
            )
        )
    fig.add_trace(
        go.Scatter(
            x=list(range(len(tokens))),
            y=weights,
            name="attention weight",
            mode="markers",
            yaxis="y2",
            marker=dict(size=9, color="#1f77b4"),
            customdata=labels,
            hovertemplate="key %{customdata}: weight %{y:.3f}<extra></extra>",
            **FAST,
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        height=360,
        margin=dict(l=10, r=10, t=84 if title else 40, b=10),  # the legend's row between the title and the plot
        title=dict(text=escape_html(title) if title else None, x=0),
        xaxis=dict(tickvals=list(range(len(tokens))), ticktext=labels, tickangle=-50),
        yaxis=dict(title=dict(text="q·k/√d − row mean"), zeroline=True, range=score_range),
        yaxis2=dict(
            title=dict(text="weight"),
            range=weight_range,
            tickvals=[0, 0.25, 0.5, 0.75, 1],
            overlaying="y",
            side="right",
            showgrid=False,
        ),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
        barmode="overlay",  # one bar per key: the two bar series never share a key
    )
    return fig


def same_scale(figs: Sequence[go.Figure]) -> float:
    """Give every heatmap in ``figs`` one colour scale, from 0 to the largest value among them (returned),
    so maps shown side by side (two models, two averages) compare by colour."""
    top = max((float(np.nanmax(t.z)) for f in figs for t in f.data if t.type == "heatmap"), default=1.0)
    for fig in figs:
        fig.update_traces(zmin=0.0, zmax=top, selector=dict(type="heatmap"))
    return top
