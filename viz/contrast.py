"""Chart text dark enough to read: WCAG AA asks 4.5:1 against the background for text this small.

Streamlit's plotly theme (``st.plotly_chart(theme="streamlit")``, the app's) draws tick labels, legend titles,
axis titles, panel titles and the values printed on bars in a light grey (#808495: 3.7:1 on white, measured in
Chromium); a figure's own ``layout.font.color`` does not change them, but colours set on the axes, the legend,
the annotations, the traces, the 3-D scenes' axes and the colour bars do. ``readable_text`` sets those the figure
left unset, so a colour a figure chose (white numbers on a dark heatmap cell) stays. The app's chart helper
(``app_pages.common.chart``) applies it to every figure, so the downloaded SVG has the same colours.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import convert_colors_to_same_type, sample_colorscale

#: Streamlit's body text (12.6:1 on white): legend entries and axis titles.
TEXT = "#31333F"
#: Tick labels, legend titles, panel titles and printed values: lighter than body text, still 7.1:1 on white.
MUTED = "#555867"


def contrast_ratio(foreground: str, background: str = "#ffffff") -> float:
    """WCAG 2's contrast ratio of two colours (hex or ``rgb(…)``): 1 (the same) to 21 (black on white)."""

    def luminance(colour: str) -> float:
        rgb = convert_colors_to_same_type([colour], colortype="tuple")[0][0]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def cell_label_colours(z: np.ndarray, colorscale, zmin: float, zmax: float) -> np.ndarray:
    """Black or white for the label on each heatmap cell, whichever contrasts more with the cell's colour: at
    least 4.58:1 on any colour. Plotly's own choice (a heatmap's ``texttemplate``) left some labels on mid-tone
    cells at 3.2:1, and its label colour cannot be set per cell; a text trace's can."""
    z = np.asarray(z, dtype=float)
    span = zmax - zmin if zmax > zmin else 1.0
    cells = sample_colorscale(colorscale, np.clip((np.nan_to_num(z, nan=zmin) - zmin) / span, 0, 1).ravel().tolist())
    best = [max(("#000000", "#ffffff"), key=lambda text, cell=cell: contrast_ratio(text, cell)) for cell in cells]
    return np.array(best, dtype=object).reshape(z.shape)


def readable_text(fig: go.Figure) -> go.Figure:
    """Give ``fig``'s axis ticks and titles, legend, annotations and printed trace values a colour that reads on
    white (:data:`TEXT`, :data:`MUTED`), wherever the figure has not chosen one. Idempotent."""
    scenes = [axis for scene in fig.select_scenes() for axis in (scene.xaxis, scene.yaxis, scene.zaxis)]  # 3-D
    bars = [c.colorbar for c in fig.select_coloraxes()] + [t.colorbar for t in fig.data if hasattr(t, "colorbar")]
    for axis in [*fig.select_xaxes(), *fig.select_yaxes(), *scenes, *bars]:  # a colour bar's scale reads as an axis
        if axis.tickfont.color is None:
            axis.tickfont.color = MUTED
        if axis.title.font.color is None:
            axis.title.font.color = TEXT
    if fig.layout.legend.font.color is None:
        fig.layout.legend.font.color = TEXT
    if fig.layout.legend.title.font.color is None:
        fig.layout.legend.title.font.color = MUTED
    for note in fig.layout.annotations:
        if note.font.color is None:
            note.font.color = MUTED
    for trace in fig.data:
        if trace.type in ("bar", "scatter") and getattr(trace, "text", None) is not None:
            if trace.type == "bar" and trace.outsidetextfont.color is None:
                trace.outsidetextfont.color = MUTED
            if trace.type == "scatter" and trace.textfont.color is None:
                trace.textfont.color = MUTED
    return fig
