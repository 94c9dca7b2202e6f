"""Plotly figure builders for the app (pure: arrays and lists in, ``go.Figure`` out).

Every label that can contain user text is passed through :func:`viz.text.escape_html`, because
plotly renders a subset of HTML in labels and hover text.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import plotly.express as px
import plotly.graph_objects as go

from viz.attention import BLUES, FAST, TEMPLATE  # the explorer's fast figures: one template, one scale
from viz.text import escape_html, shorten
from viz.titles import two_line_title

PALETTE = px.colors.qualitative.Bold + px.colors.qualitative.Pastel + px.colors.qualitative.Safe
_FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)


def base_layout(title: str | None = None, height: int | None = None) -> dict:
    """The app's figure layout (template, font, title, margins), in full form: fit for a figure built
    without validation as well as for ``update_layout``."""
    return dict(
        template=TEMPLATE,
        font=_FONT,
        title=dict(text=escape_html(title) if title else None, x=0.0),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        height=height,
        legend=dict(itemsizing="constant"),
    )


def _layout(
    fig: go.Figure,
    title: str | None = None,
    height: int | None = None,
    subtitle: str | None = None,
    widths: tuple[int, int] | None = None,
) -> go.Figure:
    """``base_layout``; with a ``subtitle``, the title as a headline and a smaller line below it (``two_line_title``,
    each wrapped to ``widths`` characters if given: the two in one line ran wider than a chart across a 1024-px
    window)."""
    fig.update_layout(**base_layout(title, height))
    if title and subtitle:
        fig.update_layout(title_text=two_line_title(title, subtitle, widths))
    return fig


#: A title longer than this is split at its " — " into a headline and a smaller second line, so that it fits a
#: chart across the page.
TITLE_LINE = 60
#: A half-width chart (one of two side by side) is ~274 px wide in a 1024-px window, the narrowest the app is laid
#: out for (a projector's width): its title's lines are wrapped to these many characters (headline, second line;
#: measured in Chromium: ~6.8 and ~5.0 px a character).
HALF_TITLE_CHARS = (36, 48)
#: The plot's width (px) in a laptop's 1280-px window (measured in Chromium), across the page or at half width: the
#: legend's rows are counted for it. plotly wraps the entries to the plot's real width and reserves the legend's
#: room below it, so a narrower window gives the legend more rows and the plot less height, a wider one the reverse.
LAPTOP_PLOT_PX = {False: 744, True: 326}
#: A legend entry's width: its label's characters (5.3–6.4 px each, measured) and its symbol and gaps; a row's height.
LEGEND_CHAR_PX, LEGEND_SYMBOL_PX, LEGEND_ROW_PX = 6.0, 36, 24
LEGEND_FONT, HALF_LEGEND_FONT = 12, 11  # the legend's font size (px) as drawn in the app, and beside another chart


def legend_rows(entries: Sequence[tuple[str, str]], plot_px: float, char_px: float = LEGEND_CHAR_PX) -> int:
    """How many rows of entries plotly lays a horizontal legend out in under a plot ``plot_px`` wide. entries:
    (name, legend group) per entry. Every entry is as wide as the widest (its longest line), as many a row as fit;
    a legend group's entries stack in one column, so a row of groups is as tall as its largest group. (plotly gives
    each group its own width, so a row may hold more: the count errs on the side of room.)"""
    lines = [line for name, _ in entries for line in re.sub(r"<[^>]+>", "\n", name).split("\n")] or [""]
    per_row = max(1, int(plot_px // (LEGEND_SYMBOL_PX + char_px * max(len(line) for line in lines))))
    sizes = list(Counter(group or name for name, group in entries).values())  # in order of first appearance
    return sum(max(sizes[k : k + per_row]) for k in range(0, len(sizes), per_row))


def chart_layout(fig: go.Figure, title: str, height: int | None = None, *, half: bool = False) -> go.Figure:
    """The layout of a chart of several series: the title in two lines when long (headline, then what the error
    bars are; ``half``, a chart beside another: always, each wrapped to fit), the legend in rows under the plot,
    as many entries a row as fit the chart's width (plotly wraps them, so no entry runs into the next at any
    window width), the figure taller by the rows a laptop's window needs, and the legend never scrolled or over
    the axis title."""
    head, sep, rest = title.partition(" — ")
    if sep and (half or len(title) > TITLE_LINE):
        _layout(fig, head, height, rest, HALF_TITLE_CHARS if half else None).update_layout(margin_t=80)
    else:
        _layout(fig, title, height)
    font = HALF_LEGEND_FONT if half else None  # smaller beside another chart: two entries a row at a laptop's width
    legend, rows = legend_below(fig, half=half, font=font)
    fig.update_layout(
        legend=dict(legend, font_size=font, tracegroupgap=0),  # a group of one entry takes a row, not a row and a gap
        margin_b=60,  # the axis title's room; plotly reserves the legend's below it
        height=None if height is None else height + LEGEND_ROW_PX * rows,
    )
    return fig


def legend_below(fig: go.Figure, *, half: bool, font: int | None = None, extra_rows: int = 0) -> tuple[dict, int]:
    """A legend in rows under the plot (plotly wraps its entries to the chart's width; ``maxheight`` 1, the whole
    figure's height, so it never scrolls) and the rows it takes in a laptop's window (``extra_rows`` more: its
    title's), by which the caller makes the figure taller."""
    entries = [(t.name, t.legendgroup) for t in fig.data if t.name and t.showlegend is not False]
    rows = extra_rows + legend_rows(entries, LAPTOP_PLOT_PX[half], LEGEND_CHAR_PX * (font or LEGEND_FONT) / LEGEND_FONT)
    return dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xanchor="left", x=0.0, maxheight=1), rows


#: A marker symbol per palette slot, beside its colour: a second cue where two hues look alike to a colour-blind
#: reader (deuteranopia and protanopia merge several of the palette's pairs).
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "cross", "pentagon", "star", "hexagon")
#: scatter3d's symbols that read at a glance (its "cross" and "x" are specks); "circle-open" rings a selection
SYMBOLS_3D = ("circle", "square", "diamond", "square-open", "diamond-open")


def model_styles(
    models: Sequence[str], twin_of: Callable[[str], str | None] = lambda model: None, order: Sequence[str] = ()
) -> dict[str, dict]:
    """Colour, marker symbol and line dash per model. A trained model's slot (its colour and symbol) is its place
    in ``order`` — the app passes the registry's models in its order, then a results folder's others by name, so
    that a model looks the same on every chart, whichever others share it — and a model not in ``order`` takes the
    next slot no model of ``order`` or of the chart holds. A random-weight twin (``twin_of(model)``: the trained
    model it re-draws, or None) takes its trained model's slot, dotted, so a twin is never a look-alike of an
    unrelated model; one whose trained model has no slot takes a slot of its own. viz imports no models: the app
    passes ``models.random_init.twin_base`` as ``twin_of``."""
    slots = {m: k for k, m in enumerate(dict.fromkeys(m for m in order if twin_of(m) is None))}
    taken = set(slots.values())
    free = (k for k in itertools.count() if k not in taken)
    styles: dict[str, dict] = {}
    for model in sorted(models, key=lambda m: twin_of(m) is not None):  # trained models choose first
        base = twin_of(model)
        owner = model if base is None else base
        if owner not in slots:
            slots[owner] = next(free)
        k = slots[owner]
        styles[model] = {
            "color": PALETTE[k % len(PALETTE)],
            "symbol": SYMBOLS[k % len(SYMBOLS)],
            "dash": "solid" if base is None else "dot",
        }
    return {model: styles[model] for model in models}


def line_style_key(fig: go.Figure, styles: dict[str, str], colour: str = "#555") -> go.Figure:
    """Legend entries that say what each line style means (name -> plotly dash), drawn in a neutral colour and
    holding no points, for charts whose colours are models and whose styles are what was measured."""
    for name, dash in styles.items():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=name, line=dict(color=colour, dash=dash)))
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


def attention_heatmap(
    att: np.ndarray, tokens: Sequence[str], *, title: str | None = None, height: int | None = None
) -> go.Figure:
    """One token-to-token heatmap: row = query token, column = key token it attends to.

    Redrawn on every head, layer or query step: built without plotly's validation (like
    ``viz.attention``'s explorer figures, ~2 ms instead of ~40 ms), every value in its full form."""
    att = np.asarray(att, np.float32)
    n = len(tokens)
    if att.shape != (n, n):
        raise ValueError(f"Attention shape {att.shape} does not match {n} tokens")
    labels = unique_labels(tokens, 25)
    heat = go.Heatmap(
        z=att,
        x=labels,
        y=labels,
        colorscale=BLUES,
        zmin=0,
        zmax=float(att.max()) if n else 1,
        hovertemplate="%{y} → %{x}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="weight"), thickness=12),
        **FAST,
    )
    layout = base_layout(title, height or min(900, max(380, 24 * n + 160))) | dict(
        yaxis=dict(autorange="reversed", title=dict(text="query (attending)"), tickfont=dict(size=11)),
        xaxis=dict(title=dict(text="key (attended to)"), tickangle=-50, tickfont=dict(size=11), side="bottom"),
    )
    return go.Figure(data=[heat], layout=layout, **FAST)
