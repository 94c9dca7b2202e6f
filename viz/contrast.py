"""Chart text dark enough to read: WCAG AA asks 4.5:1 against the background for text this small.

Streamlit's plotly theme (``st.plotly_chart(theme="streamlit")``, the app's) draws tick labels, legend titles,
axis titles, panel titles and the values printed on bars in a light grey (#808495: 3.7:1 on white, measured in
Chromium); a figure's own ``layout.font.color`` does not change them, but colours set on the axes, the legend,
the annotations, the traces, the 3-D scenes' axes and the colour bars do. ``readable_text`` sets those the figure
left unset, so a colour a figure chose (white numbers on a dark heatmap cell) stays. The app's chart helper
(``app_pages.common.chart``) applies it to every figure, so the downloaded SVG has the same colours.
"""

from __future__ import annotations

import plotly.graph_objects as go

#: Streamlit's body text (12.6:1 on white): legend entries and axis titles.
TEXT = "#31333F"
#: Tick labels, legend titles, panel titles and printed values: lighter than body text, still 7.1:1 on white.
MUTED = "#555867"


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
