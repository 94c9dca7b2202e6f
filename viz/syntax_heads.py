"""The head-syntax probe's counts on the Syntax page: a layers × heads heatmap of each head's best relation.

Clark et al. (2019) ask, per relation, which head's most attended word is the gold head (or dependent).
:func:`best_relations` reduces ``probes.estimators.head_syntax.HeadCounts`` to one row per head: its best
(relation, direction) by accuracy, or by the gain over that relation's best fixed offset (−3…+3, the
paper's baseline, measured on the same dependencies), with the offset's accuracy beside it.
:func:`head_figure` draws it: colour = accuracy (or gain), the relation on each tile, a transparent marker
per tile carrying (layer, head) from 1, as the Attention page's grid, so a click can open the head.
:func:`relation_table`: the other view, per relation the best head beside the best offset.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from probes.estimators.head_syntax import ALL, DIRECTIONS, OFFSETS, HeadCounts
from probes.tasks.head_syntax import best_heads
from viz.contrast import cell_label_colours
from viz.text import InputError, escape_html

RANKINGS = ("accuracy", "gain over offset")
MIN_COUNT = 20  # relations with fewer dependencies are left out (the head_syntax probe's --min-count default)


def best_relations(counts: HeadCounts, *, min_count: int = MIN_COUNT, by: str = RANKINGS[0]) -> pd.DataFrame:
    """Per head (layer, head from 1) its best relation and direction: by accuracy, or by the accuracy's gain
    over that relation's best fixed offset (−3…+3), with the offset's accuracy beside it."""
    if by not in RANKINGS:
        raise InputError(f"rank heads by {by!r}: choose {' or '.join(RANKINGS)}.")
    options = [(d, r) for r in counts.relations(min_count) if r != ALL for d in DIRECTIONS]
    if not options:
        raise InputError(f"No relation has {min_count} dependencies in these sentences: take more sentences.")
    acc = np.stack([counts.accuracy(d, r) for d, r in options])  # (options, layers, heads)
    offsets = np.stack([counts.offset_accuracy(d, r) for d, r in options])  # (options, offsets)
    base = offsets.max(1)
    best = np.argmax(acc - base[:, None, None] if by == RANKINGS[1] else acc, axis=0)
    rows = []
    for layer in range(counts.layers):
        for head in range(counts.heads):
            k = int(best[layer, head])
            (direction, rel), a = options[k], float(acc[k, layer, head])
            rows.append(
                {
                    "layer": layer + 1,
                    "head": head + 1,
                    "relation": rel,
                    "direction": direction,
                    "accuracy": round(a, 2),
                    "offset": OFFSETS[int(np.argmax(offsets[k]))],
                    "offset_accuracy": round(float(base[k]), 2),
                    "gain": round(a - float(base[k]), 2),
                    "n": int(sum(counts.total[rel])),
                }
            )
    return pd.DataFrame(rows)


def head_figure(
    frame: pd.DataFrame, selected: tuple[int, int] | None = None, *, value: str = "accuracy", title: str = ""
) -> go.Figure:
    """Layers × heads, colour = the best relation's ``value`` ("accuracy" or "gain" over the best fixed offset),
    the relation written on each tile; ``selected`` (layer, head from 1) outlined."""
    L, H = int(frame["layer"].max()), int(frame["head"].max())
    grid = frame.sort_values(["layer", "head"])
    z = grid[value].to_numpy().reshape(L, H)
    hover = [
        f"layer {r.layer}, head {r.head}: {escape_html(r.relation)} ({r.direction}) {r.accuracy:.1f}%<br>"
        f"best fixed offset {r.offset:+d}: {r.offset_accuracy:.1f}% · {r.n} dependencies · click to open"
        for r in grid.itertuples()
    ]
    xs, ys = [f"H{h}" for h in range(1, H + 1)], [f"L{layer}" for layer in range(1, L + 1)]
    zmin, zmax = float(np.nanmin(z)), float(np.nanmax(z))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=xs,
            y=ys,
            zmin=zmin,
            zmax=zmax,
            colorscale="Viridis",
            colorbar=dict(title="%" if value == "accuracy" else "points", thickness=12),
            hoverinfo="skip",
            name=value,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[f"H{h}" for h in grid["head"]],
            y=[f"L{layer}" for layer in grid["layer"]],
            mode="markers+text",  # the relation on each tile, in black or white as reads best on its colour
            text=grid["relation"].tolist(),
            textfont=dict(color=cell_label_colours(z, "Viridis", zmin, zmax).ravel().tolist()),
            textposition="middle center",
            marker=dict(symbol="square", size=26, color="rgba(0,0,0,0)"),
            hovertext=hover,
            hoverinfo="text",
            customdata=grid[["layer", "head"]].to_numpy(),
            showlegend=False,
            name="heads",
            selected=dict(marker=dict(opacity=1)),
            unselected=dict(marker=dict(opacity=1)),
        )
    )
    if selected is not None:
        fig.add_shape(
            type="rect",
            x0=selected[1] - 1.5,
            x1=selected[1] - 0.5,
            y0=selected[0] - 1.5,
            y1=selected[0] - 0.5,
            line=dict(color="#d62728", width=3),
        )
    fig.update_yaxes(autorange="reversed", fixedrange=True)
    fig.update_xaxes(fixedrange=True)
    fig.update_layout(
        template="plotly_white", height=80 + 36 * L, margin=dict(l=10, r=10, t=50, b=10), title=dict(text=title, x=0)
    )
    return fig


def relation_table(counts: HeadCounts, *, min_count: int = MIN_COUNT) -> pd.DataFrame:
    """Per relation and direction: the best head (layer and head from 1, as the Attention page counts) and
    the best fixed offset on the same dependencies (``probes.tasks.head_syntax.best_heads``)."""
    best = best_heads(counts, counts.relations(min_count))
    return pd.DataFrame(
        [
            {
                "relation": rel,
                "direction": direction,
                "dependencies": b["n"],
                "best head": f"L{b['layer']} H{b['head'] + 1}",
                "head accuracy": b["accuracy"],
                "best offset": f"{b['offset']:+d}",
                "offset accuracy": b["offset_accuracy"],
                # the margin, not a bare win: a head picked among many on these dependencies beats the offset by a
                # dependency or two as often as not (nmod 23.76 vs 22.70 on 282)
                "head − offset (points)": round(b["accuracy"] - b["offset_accuracy"], 2),
            }
            for direction, by_rel in best.items()
            for rel, b in by_rel.items()
        ]
    )
