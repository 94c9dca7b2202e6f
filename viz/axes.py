"""Y axes that tell the truth: a percentage axis never zooms into noise, unbounded metrics start at 0, and a line at
an axis's end is drawn whole.

``metric_axis(metric, values)`` gives a chart's y-axis title and range: percentages within [0, 100] spanning at
least :data:`MIN_SPAN` points (``honest_range``), the metrics of :data:`METRIC_AXES` with their own unit and bounds.
``percent_or_zero`` is a bar chart's axis (bars start at 0). Pure: numbers in, plotly axis settings out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_SPAN = 20.0  # percentage points: a y axis never zooms closer, so noise does not look like a trend


def _finite(values: Sequence[float]) -> list[float]:
    """The values that can be drawn (no None, NaN or infinity)."""
    return [float(v) for v in values if v is not None and np.isfinite(v)]


def honest_range(
    values: Sequence[float], *, min_span: float = MIN_SPAN, bounds: tuple[float, float] = (0, 100)
) -> list[float]:
    """A y range holding every value (and interval bound) that spans at least ``min_span`` points,
    within ``bounds``: a 1-point difference never fills the whole height."""
    vals = _finite(values)
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


#: Per metric: (axis title, bounds, minimum span). Percentages live in [0, 100]; selectivity is a
#: difference of two percentages; codelengths and compression ratios have no upper bound, so their
#: axis starts at 0 (a bar of nothing is nothing) and spans at least a fifth of the largest value.
PERCENT = ("%", (0.0, 100.0), MIN_SPAN)
METRIC_AXES: dict[str, tuple[str, tuple[float, float], float]] = {
    "selectivity": ("points: task − control accuracy", (-100.0, 100.0), MIN_SPAN),
    "DSpr": ("Spearman ρ × 100", (-100.0, 100.0), MIN_SPAN),  # structural probe: a correlation, which may be < 0
    "NSpr": ("Spearman ρ × 100", (-100.0, 100.0), MIN_SPAN),
    "codelength_kbits": ("kbits", (0.0, float("inf")), 0.0),
    "control_codelength_kbits": ("kbits", (0.0, float("inf")), 0.0),
    "compression": ("× the uniform code", (0.0, float("inf")), 0.0),
    "control_compression": ("× the uniform code", (0.0, float("inf")), 0.0),
}


#: How far (a share of the span) an axis reaches past a value that sits exactly on its end: plotly clips lines at the
#: plot's edge, so a baseline at 100 % was drawn half; the ticks still end at 100.
LINE_ROOM = 0.008


def room_for_lines(axis_range: Sequence[float], values: Sequence[float]) -> list[float]:
    """``axis_range`` widened by :data:`LINE_ROOM` of its span at an end some value sits on (a line there is drawn
    whole), as it is otherwise."""
    lo, hi = float(axis_range[0]), float(axis_range[1])
    vals = set(_finite(values))
    room = LINE_ROOM * (hi - lo)
    return [lo - room if lo in vals else lo, hi + room if hi in vals else hi]


def percent_or_zero(metric: str, values: Sequence[float]) -> dict:
    """The y axis of a bar chart from 0: [0, 100] for a percentage (room for a line at an end), else from 0."""
    unit = METRIC_AXES.get(metric, PERCENT)[0]
    axis = {"range": room_for_lines([0, 100], values)} if unit == "%" else {"rangemode": "tozero"}
    return {"title": f"{metric} ({unit})", **axis}


def metric_axis(metric: str, values: Sequence[float]) -> tuple[str, list[float]]:
    """The y-axis title and range for ``metric`` holding ``values`` (``honest_range`` with the metric's
    unit and bounds; unbounded metrics start at 0)."""
    unit, bounds, min_span = METRIC_AXES.get(metric, PERCENT)
    title = f"{metric.removesuffix('_' + unit)} ({unit})"  # "codelength (kbits)": the unit once
    if bounds[1] == float("inf"):
        top = max(_finite(values), default=1.0)
        return title, [0.0, top * 1.08 if top > 0 else 1.0]
    return title, room_for_lines(honest_range(values, min_span=min_span, bounds=bounds), values)
