"""A figure's heatmap as a vector SVG: one ``<rect>`` a cell, text as text.

plotly.js exports a heatmap to SVG as one embedded PNG (it draws heatmaps on a canvas), so a "vector" download
of an attention map was a picture that blurs when a paper scales it. :func:`heatmap_svg` writes the figure's one
heatmap trace itself: each finite cell a rectangle filled by the trace's colour scale between its ``zmin`` and
``zmax`` (NaN cells, the gaps of a mosaic, left empty), row 0 at the top where the y axis is reversed (as plotly
draws it), the column and row labels from the trace's ``x``/``y`` or the axes' tick labels, the title and axis
titles, a colour bar, and the text a figure writes over its cells (a text trace on the map's categories, as the
CKA map's values and the head map's relations are: plotly cannot colour a heatmap's own cell text per cell), each
label in its trace's colour. Only what a heatmap figure needs; None for a figure that is not one heatmap.
"""

from __future__ import annotations

import html
import re

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale, sample_colorscale

from viz.titles import plain_text

FONT = 'font-family="Helvetica, Arial, sans-serif"'
CHAR_PX = 6.5  # width of a character of 11-px text, for the margins
MAX_CELLS = 250_000  # ~12 MB of SVG; a larger map is left to the PNG


def _text(value) -> str:
    """A label or title as plain text (``viz.titles.plain_text``: plotly's markup dropped), escaped for XML."""
    return html.escape(plain_text(re.sub(r"<br\s*/?>", " ", str(value if value is not None else ""))), quote=True)


def _text_at(
    x: float, y: float, text, *, anchor: str = "start", size: float = 11, rotate: int | None = None, fill: str = ""
) -> str:
    turn = f' transform="rotate({rotate} {x:.2f} {y:.2f})"' if rotate else ""
    colour = f' fill="{html.escape(fill, quote=True)}"' if fill else ""
    return (
        f'<text x="{x:.2f}" y="{y:.2f}" font-size="{size:g}" text-anchor="{anchor}"{turn}{colour} {FONT}>'
        f"{_text(text)}</text>"
    )


def _cell_texts(fig: go.Figure, heat, rows: int, cols: int) -> list[tuple[int, int, str, str, float]]:
    """(row, column, text, colour, font size) of each label a text trace writes on a cell of the map: its x and y
    are among the map's own ``x`` and ``y`` categories (or cell indices where the map has none)."""

    def index(values, count: int) -> dict:
        return {v: i for i, v in enumerate(values)} if values is not None else {i: i for i in range(count)}

    col_of, row_of = index(heat.x, cols), index(heat.y, rows)
    out = []
    for trace in fig.data:
        if trace.type != "scatter" or "text" not in (trace.mode or "") or trace.text is None:
            continue
        texts = trace.text if not isinstance(trace.text, str) else [trace.text] * len(trace.x)
        colours = trace.textfont.color
        colours = list(colours) if isinstance(colours, (list, tuple, np.ndarray)) else [colours] * len(texts)
        size = float(trace.textfont.size or 11)
        for x, y, text, colour in zip(trace.x, trace.y, texts, colours):
            if str(text) and x in col_of and y in row_of:
                out.append((row_of[y], col_of[x], str(text), colour or "#000000", size))
    return out


def _labels(values, axis, count: int) -> list[tuple[float, str]]:
    """(cell position, label) of an axis: the trace's own labels, else the axis's tick labels, else none."""
    if values is not None and len(values) == count:
        return [(i, str(v)) for i, v in enumerate(values)]
    if axis.tickvals is not None and axis.ticktext is not None:
        return [(float(v), str(t)) for v, t in zip(axis.tickvals, axis.ticktext)]
    return []


def _colours(trace, layout) -> tuple[list, float | None, float | None] | None:
    """(colour scale, low, high) of the heatmap: its own, or its ``coloraxis``'s; None when it names neither."""
    axis = layout[trace.coloraxis] if trace.coloraxis else None
    scale = trace.colorscale if trace.colorscale is not None else (axis.colorscale if axis is not None else None)
    if scale is None:
        return None
    scale = get_colorscale(scale) if isinstance(scale, str) else [list(s) for s in scale]
    reverse = trace.reversescale if axis is None else axis.reversescale
    if reverse:
        scale = [[1 - pos, colour] for pos, colour in reversed(scale)]
    lo, hi = (trace.zmin, trace.zmax) if axis is None else (axis.cmin, axis.cmax)
    return scale, lo, hi


def drawable(fig: go.Figure) -> bool:
    """Whether :func:`heatmap_svg` can draw the figure: exactly one heatmap, a 2-D ``z`` of at most ``MAX_CELLS``
    cells, a colour scale (its own or its colour axis's)."""
    heats = [t for t in fig.data if t.type == "heatmap"]
    return (
        len(heats) == 1
        and heats[0].z is not None
        and np.ndim(heats[0].z) == 2
        and 0 < np.size(heats[0].z) <= MAX_CELLS
        and _colours(heats[0], fig.layout) is not None
    )


def heatmap_svg(fig: go.Figure) -> bytes | None:
    """The figure's one heatmap as a vector SVG document (UTF-8), or None when it cannot (``drawable``)."""
    if not drawable(fig):
        return None
    (trace,) = [t for t in fig.data if t.type == "heatmap"]
    layout = fig.layout
    z = np.asarray(trace.z, dtype=float)
    rows, cols = z.shape
    scale, lo, hi = _colours(trace, layout)
    finite = z[np.isfinite(z)]
    if lo is None or hi is None:  # the data's own range, centred on zmid where the trace sets one
        data_lo, data_hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if trace.zmid is not None:
            half = max(abs(data_lo - trace.zmid), abs(data_hi - trace.zmid))
            data_lo, data_hi = trace.zmid - half, trace.zmid + half
        lo = data_lo if lo is None else lo
        hi = data_hi if hi is None else hi
    lo, hi = float(lo), float(hi)
    cell = float(np.clip(560 / max(rows, cols), 3, 28))
    xlab, ylab = _labels(trace.x, layout.xaxis, cols), _labels(trace.y, layout.yaxis, rows)
    left = 16 + CHAR_PX * max((len(t) for _, t in ylab), default=0) + (18 if layout.yaxis.title.text else 0)
    bottom = 16 + 0.75 * CHAR_PX * max((len(t) for _, t in xlab), default=0) + (18 if layout.xaxis.title.text else 0)
    top, width, height = 48.0, cols * cell, rows * cell
    reversed_y = layout.yaxis.autorange == "reversed"

    def row_y(r: float) -> float:  # the top edge of row r's cell
        return top + (r if reversed_y else rows - 1 - r) * cell

    out = []
    t = (z - lo) / (hi - lo) if hi > lo else np.zeros_like(z)
    colours = np.full(z.shape, "", dtype=object)
    ok = np.isfinite(z)
    colours[ok] = sample_colorscale(scale, np.clip(t[ok], 0, 1).tolist())
    for r in range(rows):
        for c in range(cols):
            if ok[r, c]:
                out.append(
                    f'<rect x="{left + c * cell:.2f}" y="{row_y(r):.2f}" width="{cell:.2f}" height="{cell:.2f}" '
                    f'fill="{colours[r, c]}"><title>{z[r, c]:.4g}</title></rect>'
                )
    for r, c, text, colour, size in _cell_texts(fig, trace, rows, cols):  # shrunk to fit its cell
        size = min(size, 0.42 * cell, 1.5 * cell / len(text))
        out.append(
            _text_at(
                left + (c + 0.5) * cell, row_y(r) + cell / 2 + size / 3, text, anchor="middle", size=size, fill=colour
            )
        )
    for pos, label in xlab:  # column labels under the map, slanted
        out.append(_text_at(left + (pos + 0.5) * cell, top + height + 10, label, anchor="end", rotate=-50))
    for pos, label in ylab:
        out.append(_text_at(left - 6, row_y(pos) + cell / 2 + 4, label, anchor="end"))
    bar_x = left + width + 24
    stops = "".join(
        f'<stop offset="{k / 20:.2f}" stop-color="{colour}"/>'
        for k, colour in enumerate(sample_colorscale(scale, [1 - k / 20 for k in range(21)]))
    )
    out.append(f'<defs><linearGradient id="bar" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>')
    out.append(f'<rect x="{bar_x:.2f}" y="{top:.2f}" width="12" height="{height:.2f}" fill="url(#bar)"/>')
    out += [_text_at(bar_x + 16, top + 4, f"{hi:.3g}"), _text_at(bar_x + 16, top + height, f"{lo:.3g}")]
    if layout.title.text:
        out.append(_text_at(left, 24, layout.title.text, size=14))
    if layout.xaxis.title.text:
        out.append(
            _text_at(left + width / 2, top + height + bottom - 4, layout.xaxis.title.text, anchor="middle", size=12)
        )
    if layout.yaxis.title.text:
        out.append(_text_at(14, top + height / 2, layout.yaxis.title.text, anchor="middle", size=12, rotate=-90))
    w, h = bar_x + 60, top + height + bottom
    head = f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}">'
    return "\n".join([head, '<rect width="100%" height="100%" fill="white"/>', *out, "</svg>\n"]).encode("utf-8")
