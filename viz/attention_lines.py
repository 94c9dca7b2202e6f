"""bertviz's head view as a plotly figure: the tokens twice (queries left, keys right), a line from each
query to each key it attends to, its opacity and width the weight.

What bertviz users expect, and how it is drawn here:

- **Focus.** A focused token (a query on the left, or a key on the right) keeps its lines at full
  strength, one trace per link (its weight in the hover of the token at its other end); every other line is faded to
  :data:`FADE` of its opacity, so the token's links stand out while the head's pattern stays visible.
  The tokens are clickable points (``customdata`` = [side, index], side 0 = query, 1 = key): the page
  turns a click into the focus (``st.plotly_chart(on_select=…)``); hovering one lists its strongest links.
- **Threshold.** Links under ``threshold`` are not drawn at all (bertviz draws them nearly invisible).
- **Several heads.** ``att`` may be (heads, n, n) with their ``heads`` numbers: each head in its own colour
  (:func:`head_colours`, bertviz's category-10 first), one legend entry per head.

Speed: weights are binned into :data:`LEVELS` opacity levels, one trace per level and head, so a 40-token
sentence is a few dozen traces however many links; built without plotly's validation (``FAST``).
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import hex_to_rgb, qualitative

from viz.text import escape_html, shorten

FAST = {"_validate": False}
TEMPLATE = pio.templates["plotly_white"]
LEVELS = 8  # opacity levels of the unfocused lines
FADE = 0.2  # an unfocused line's opacity, relative to its own, while a token is focused
SINGLE = (31, 119, 180)  # one head: blue lines ...
FOCUS = (214, 39, 40)  # ... and the focused token's in red
#: d3's category-10 (bertviz's head colours), then Dark24 colours far from them.
PALETTE = [*qualitative.D3, "#511CFB", "#00A08B", "#FB00D1", "#6C7C32", "#862A16", "#1616A7", "#B68100", "#620042"]
#: A line style per head beside its colour when several heads are drawn: D3's colours merge in pairs for a
#: colour-blind reader (orange, green and red; blue and purple).
HEAD_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def head_colours(n: int) -> list[tuple[int, int, int]]:
    """``n`` distinct RGB colours: :data:`PALETTE`, then evenly spaced hues for more heads than it holds."""
    colours = [tuple(hex_to_rgb(c)) for c in PALETTE[:n]]
    extra = n - len(colours)
    for i in range(extra):
        r, g, b = colorsys.hsv_to_rgb((i + 0.5) / extra, 0.85, 0.75)
        colours.append((round(r * 255), round(g * 255), round(b * 255)))
    return colours


def rgba(rgb: Sequence[int], alpha: float) -> str:
    return f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{min(max(alpha, 0.0), 1.0):.3f})"


def segments(qs: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x, y of lines from query rows ``qs`` (x = 0) to key rows ``ks`` (x = 1), NaN between lines."""
    gaps = np.full(len(qs), np.nan)
    xs = np.column_stack([np.zeros(len(qs)), np.ones(len(qs)), gaps]).ravel()
    ys = np.column_stack([-np.asarray(qs, float), -np.asarray(ks, float), gaps]).ravel()
    return xs, ys


def focus_mask(n: int, query: int | None, key: int | None) -> np.ndarray:
    """(n, n) True on the focused token's links: the key's column when a key is focused, else the query's row."""
    mask = np.zeros((n, n), bool)
    if key is not None and 0 <= key < n:
        mask[:, key] = True
    elif query is not None and 0 <= query < n:
        mask[query] = True
    return mask


def line_view(
    att: np.ndarray,
    tokens: Sequence[str],
    *,
    query: int | None = None,
    key: int | None = None,
    fade: bool = True,
    threshold: float = 0.02,
    heads: Sequence[int] | None = None,
    title: str | None = None,
    height: int | None = None,
    top: float | None = None,
) -> go.Figure:
    """The head view of one head's (n, n) map or several heads' (k, n, n) maps (``heads``: their numbers).

    ``query`` / ``key`` (0-based): the focused token (a key wins over a query); ``fade``: dim every other
    line (:data:`FADE`). Lines under ``threshold`` are left out. ``top``: the weight drawn at full strength
    (default: the largest shown); views side by side pass the same, so their lines compare.
    """
    a = np.asarray(att, np.float32)
    n = len(tokens)
    stack = a[None] if a.ndim == 2 else a
    if stack.ndim != 3 or stack.shape[1:] != (n, n):
        raise ValueError(f"Attention shape {a.shape} does not match {n} tokens")
    several = a.ndim == 3
    heads = list(heads) if heads is not None else list(range(1, len(stack) + 1))
    if len(heads) != len(stack):
        raise ValueError(f"{len(stack)} attention maps but {len(heads)} head numbers")
    if not 0 <= threshold < 1:
        raise ValueError(f"The threshold is a weight in [0, 1), got {threshold}")
    labels = [escape_html(shorten(str(t), 20)) for t in tokens]
    top = max(top if top is not None else (float(stack.max()) if n else 1.0), threshold + 1e-6)
    focus = focus_mask(n, query, key)
    dim = FADE if fade and focus.any() else 1.0
    colours = head_colours(len(stack)) if several else [SINGLE]
    dashes = [HEAD_DASHES[h % len(HEAD_DASHES)] if several else "solid" for h in range(len(stack))]
    edges = np.linspace(threshold, top, LEVELS + 1)
    fig = go.Figure(**FAST)
    for h, (m, colour) in enumerate(zip(stack, colours)):
        style = _HeadStyle(f"head {heads[h]}", colour, dashes[h], several)
        for trace in _head_traces(m, style, edges, focus, threshold, top, dim):
            fig.add_trace(trace)
    for side in (0, 1):
        fig.add_trace(
            _token_trace(stack, heads, labels, focus, side, (query if key is None else None) if side == 0 else key)
        )
    legend_rows = -(-len(stack) // 4) if several else 0  # four heads a row
    fig.update_xaxes(visible=False, range=[-0.9, 1.9], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-n + 0.4, 0.6], fixedrange=True)
    fig.update_layout(
        template=TEMPLATE,
        height=(height or min(900, max(300, 22 * n + 70))) + legend_rows * 22,
        margin=dict(l=10, r=10, t=40 if title else 10, b=10 + legend_rows * 22),
        title=dict(text=escape_html(title) if title else None, x=0),
        showlegend=several,  # under the tokens: above them it ran into the title once the heads wrapped
        legend=dict(orientation="h", y=0, yanchor="top", x=0, xanchor="left", font=dict(size=11)),
        dragmode=False,
        hovermode="closest",
        clickmode="event+select",
    )
    return fig


@dataclass(frozen=True)
class _HeadStyle:
    """How one head's lines look: its legend group, colour, line style, and whether several heads share the view."""

    group: str
    colour: tuple[int, int, int]
    dash: str
    several: bool


def _head_traces(
    m: np.ndarray, style: _HeadStyle, edges: np.ndarray, focus: np.ndarray, threshold: float, top: float, dim: float
) -> list[go.Scatter]:
    """One head's lines: every link over ``threshold`` not focused, one trace per strength level (``edges``),
    dimmed by ``dim`` when a token is focused; each focused link on its own; with several heads, its legend entry."""
    traces = []
    for b in range(LEVELS):
        sel = (m >= edges[b]) & ((m < edges[b + 1]) if b < LEVELS - 1 else (m <= edges[b + 1]))
        sel &= ~focus
        qs, ks = np.nonzero(sel)
        if not len(qs):
            continue
        xs, ys = segments(qs, ks)
        level = (b + 1) / LEVELS
        traces.append(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                legendgroup=style.group,
                line=dict(color=rgba(style.colour, (0.15 + 0.75 * level) * dim), width=1 + 4 * level, dash=style.dash),
                **FAST,
            )
        )
    for i, j in zip(*np.nonzero(focus & (m >= threshold))):
        w = float(m[i, j])
        traces.append(
            go.Scatter(
                x=[0, 1],
                y=[-i, -j],
                mode="lines",
                showlegend=False,
                legendgroup=style.group,
                line=dict(
                    color=rgba(style.colour if style.several else FOCUS, 0.25 + 0.75 * w / top),
                    width=1 + 6 * min(w / top, 1),
                    dash=style.dash,
                ),
                hoverinfo="skip",  # its ends sit on the tokens: a hover or click there is the token's
                **FAST,
            )
        )
    if style.several:  # the legend: one entry per head, in its colour
        traces.append(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                showlegend=True,
                name=style.group,
                legendgroup=style.group,
                line=dict(color=rgba(style.colour, 1.0), width=4, dash=style.dash),
                **FAST,
            )
        )
    return traces


def _token_trace(
    stack: np.ndarray, heads: Sequence[int], labels: Sequence[str], focus: np.ndarray, side: int, focused: int | None
) -> go.Scatter:
    """The tokens of one side (0: the queries on the left, 1: the keys on the right), clickable, each with its
    strongest links in its hover; the ``focused`` token red and ringed."""
    n = len(labels)
    hover = [
        _links_text(stack, heads, i, side, labels) + _focus_text(stack, heads, focus, i, side, labels) for i in range(n)
    ]
    return go.Scatter(
        x=[side] * n,
        y=-np.arange(n),
        mode="markers+text",
        text=labels,
        showlegend=False,
        textposition=("middle left", "middle right")[side],
        textfont=dict(size=12, color=["#d62728" if focused == i else "#222" for i in range(n)]),
        # the focused token is ringed, not only red: a red label beside dark ones is lost to a protanope
        marker=dict(
            size=14,
            symbol="circle-open",
            color=["#d62728" if focused == i else "rgba(0,0,0,0)" for i in range(n)],
            line=dict(width=2),
        ),
        selected=dict(marker=dict(opacity=1)),
        unselected=dict(marker=dict(opacity=1)),
        customdata=[[side, i] for i in range(n)],
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        **FAST,
    )


def _focus_text(
    stack: np.ndarray, heads: Sequence[int], focus: np.ndarray, i: int, side: int, labels: Sequence[str]
) -> str:
    """The weights of the focused token's links that end at token ``i`` (one line per head), for its hover."""
    line = focus[:, i] if side == 1 else focus[i]  # the focused links that end at this token
    ends = np.nonzero(line)[0]
    if not len(ends) or line.all():  # none, or this is the focused token itself
        return ""
    j = int(ends[0])
    q, k = (j, i) if side == 1 else (i, j)
    weights = ", ".join(f"{w:.3f}" for w in stack[:, q, k])
    name = "" if len(stack) == 1 else f" (heads {', '.join(map(str, heads))})"
    return f"<br>focus: {labels[q]} → {labels[k]}: {weights}{name}"


def _links_text(stack: np.ndarray, heads: Sequence[int], i: int, side: int, labels: Sequence[str], k: int = 3) -> str:
    """The hover text of token ``i``: its strongest links (as a query on the left, as a key on the right). With
    several heads, the links strongest on average, each with its mean and every head's weight: a bare mean read
    as the open head's weight (0.16 where that head's was 0.39)."""
    rows = stack[:, i] if side == 0 else stack[:, :, i]  # (heads, n)
    mean = rows.mean(0)
    best = np.argsort(-mean, kind="stable")[:k]
    arrow = "→" if side == 0 else "←"
    if len(stack) == 1:
        links = "<br>".join(f"{arrow} {labels[j]}: {mean[j]:.2f}" for j in best)
        return f"<b>{labels[i]}</b> (click to focus)<br>{links}"
    links = "<br>".join(
        f"{arrow} {labels[j]}: mean {mean[j]:.2f} ({', '.join(f'H{h} {w:.2f}' for h, w in zip(heads, rows[:, j]))})"
        for j in best
    )
    return f"<b>{labels[i]}</b> (click to focus) · strongest on average over {len(stack)} heads<br>{links}"
