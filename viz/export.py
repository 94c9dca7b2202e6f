"""Exports: every chart as SVG or PNG from plotly's own modebar, and its data as CSV/JSON bytes.

Pure helpers (no streamlit); pages hand their bytes to ``st.download_button``:

- :func:`chart_config` — the ``config=`` of every ``st.plotly_chart``: the modebar (not the
  plotly logo) with its "Download plot" button set to SVG or PNG at a publication size
  (``toImageButtonOptions``: 1200 × 700 px at 2× for PNG). Plotly.js gives one image format per
  button and a JSON config cannot add JavaScript buttons, so the format is a per-session choice
  (the app's sidebar), SVG by default: vector, editable, and what a paper wants.
- :func:`figure_frame` / :func:`figure_csv` — the data behind any figure (one row per point or
  heatmap cell, with its trace's name), whatever built it.
- :func:`frame_csv` / :func:`frame_json` — a DataFrame (projection coordinates, per-layer scores).
- :func:`attention_frame` / :func:`attention_csv` / :func:`attention_json` — (layers, heads, n, n)
  attention maps with their tokens.
- :func:`run_record` / :func:`run_record_json` — what reproduces a probe run: model, fingerprint,
  seed, layers, the data it saw (dataset, slice, hash), the command, the time, and the rows.

    >>> import plotly.graph_objects as go
    >>> figure_frame(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="a"))).to_dict("records")
    [{'trace': 'a', 'x': 1, 'y': 3}, {'trace': 'a', 'x': 2, 'y': 4}]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

FORMATS = ("svg", "png")
IMAGE_WIDTH, IMAGE_HEIGHT, PNG_SCALE = 1200, 700, 2
_UNSAFE = re.compile(r"[^0-9A-Za-z._-]+")


def file_stem(*parts: Any) -> str:
    """A safe file name stem from parts ("polysemy", "bank", "minilm", 6 → polysemy-bank-minilm-6)."""
    text = "-".join(_UNSAFE.sub("_", str(p)).strip("_") for p in parts if p is not None and str(p) != "")
    return text[:120] or "chart"


def chart_config(
    name: str,
    fmt: str = "svg",
    *,
    width: int | None = IMAGE_WIDTH,
    height: int | None = IMAGE_HEIGHT,
    modebar: bool = True,
) -> dict:
    """plotly ``config`` for ``st.plotly_chart``: the download button saves ``<name>.<fmt>``.

    ``width``/``height`` None keep the size drawn on screen (a tall attention grid, say).
    """
    if fmt not in FORMATS:
        raise ValueError(f"Image format {fmt!r} is not one of {', '.join(FORMATS)}.")
    image = {"format": fmt, "filename": file_stem(name), "scale": PNG_SCALE if fmt == "png" else 1}
    image |= {k: v for k, v in (("width", width), ("height", height)) if v is not None}
    return {
        "displaylogo": False,
        "displayModeBar": True if modebar else "hover",
        "toImageButtonOptions": image,
        "modeBarButtonsToRemove": ["lasso2d", "select2d", "autoScale2d"],
    }


# ---------------------------------------------------------------------------- figure data


def _values(v: Any) -> list | None:
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or np.isscalar(v):
        return None
    return list(np.asarray(v, dtype=object).ravel()) if not isinstance(v, (list, tuple)) else list(v)


def _trace_rows(trace: Any) -> list[dict]:
    name = getattr(trace, "name", None) or trace.type
    if trace.type == "heatmap":
        z = np.asarray(trace.z, dtype=float) if trace.z is not None else np.empty((0, 0))
        xs = list(trace.x) if trace.x is not None else list(range(z.shape[1] if z.ndim == 2 else 0))
        ys = list(trace.y) if trace.y is not None else list(range(z.shape[0] if z.ndim == 2 else 0))
        return [
            {"trace": name, "x": xs[j], "y": ys[i], "z": float(z[i, j])}
            for i in range(z.shape[0])
            for j in range(z.shape[1])
        ]
    if trace.type == "scatter" and trace.mode == "text" and trace.hoverinfo == "skip":
        return []  # labels printed on another trace's points (a heatmap's cell values): that trace's rows hold them
    cols = {axis: _values(getattr(trace, axis, None)) for axis in ("x", "y", "z")}
    cols = {k: v for k, v in cols.items() if v is not None}
    n = max((len(v) for v in cols.values()), default=0)
    extra = {}
    for attr, col in (("text", "text"), ("hovertext", "hover"), ("customdata", "customdata")):
        v = _values(getattr(trace, attr, None))
        if v is not None and len(v) == n:
            extra[col] = v
    error_y = getattr(trace, "error_y", None)
    if error_y is not None and error_y.array is not None and len(error_y.array) == n:
        extra["error_plus"] = list(error_y.array)
        extra["error_minus"] = list(error_y.arrayminus) if error_y.arrayminus is not None else list(error_y.array)
    rows = []
    for i in range(n):
        row = {"trace": name}
        row |= {k: v[i] for k, v in cols.items() if i < len(v)}
        row |= {k: v[i] for k, v in extra.items()}
        rows.append(row)
    return rows


def figure_frame(fig: go.Figure) -> pd.DataFrame:
    """One row per drawn point (scatter/line/bar) or cell (heatmap), tagged with its trace's name."""
    rows = [row for trace in fig.data for row in _trace_rows(trace)]
    frame = pd.DataFrame(rows)
    if "hover" in frame:  # plotly hover text is HTML: line breaks back to text
        frame["hover"] = frame["hover"].map(lambda h: re.sub(r"<br\s*/?>", " | ", str(h)) if h is not None else h)
    return frame


def figure_csv(fig: go.Figure) -> bytes:
    return frame_csv(figure_frame(fig))


#: Columns that hold layer numbers and counts: whole numbers in every CSV, never "37.0".
COUNT_COLUMNS = ("layer", "layers", "n", "clusters", "draws", "seeds", "sentences", "words", "occurrences")


def frame_csv(df: pd.DataFrame) -> bytes:
    """UTF-8 CSV without the index; layer numbers and counts (``COUNT_COLUMNS``) as whole numbers."""
    return whole_counts(df).to_csv(index=False).encode("utf-8")


def whole_counts(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its count columns as whole numbers: a missing value (a baseline's layer, a plain run's seeds) or
    a float computation made them float ("0.0", "37.0")."""
    whole = [c for c in COUNT_COLUMNS if c in df and pd.api.types.is_numeric_dtype(df[c]) and _whole(df[c])]
    return df.astype(dict.fromkeys(whole, "Int64")) if whole else df


def with_baselines(rows: pd.DataFrame, base: pd.DataFrame | None) -> pd.DataFrame:
    """A chart's rows and its baselines' (``base``: label, value[, lo, hi]; None: the chart has none), named in a
    column ``baseline``, as its CSV has them, counts whole (``whole_counts``)."""
    out = rows if base is None else pd.concat([rows, base.rename(columns={"label": "baseline"})], ignore_index=True)
    return whole_counts(out)


def _whole(column: pd.Series) -> bool:
    values = column.dropna()
    return bool((values == values.round()).all())


def frame_json(df: pd.DataFrame) -> bytes:
    """JSON records (NaN as null), readable by ``pd.read_json(..., orient="records")``."""
    return df.to_json(orient="records", force_ascii=False, indent=1).encode("utf-8")


# ---------------------------------------------------------------------------- attention


def _check_attention(att: np.ndarray, tokens: Sequence[str]) -> np.ndarray:
    att = np.asarray(att, dtype=np.float32)
    if att.ndim == 2:
        att = att[None, None]
    if att.ndim != 4 or att.shape[-1] != att.shape[-2] or att.shape[-1] != len(tokens):
        raise ValueError(
            f"Attention of shape {att.shape} does not fit {len(tokens)} tokens "
            "(expected (layers, heads, n, n) or (n, n))."
        )
    return att


def attention_frame(
    att: np.ndarray, tokens: Sequence[str], *, layers: Sequence[int] | None = None, heads: Sequence[int] | None = None
) -> pd.DataFrame:
    """Long table: layer, head (1-based unless given), query/key position (1-based) and token, weight."""
    att = _check_attention(att, tokens)
    L, H, n, _ = att.shape
    layers = list(layers) if layers is not None else list(range(1, L + 1))
    heads = list(heads) if heads is not None else list(range(1, H + 1))
    li, hi, qi, ki = (
        g.ravel() for g in np.meshgrid(np.arange(L), np.arange(H), np.arange(n), np.arange(n), indexing="ij")
    )
    tok = np.asarray(list(tokens), dtype=object)
    return pd.DataFrame(
        {
            "layer": np.asarray(layers)[li],
            "head": np.asarray(heads)[hi],
            "query position": qi + 1,
            "query": tok[qi],
            "key position": ki + 1,
            "key": tok[ki],
            "weight": att.ravel().astype(float),
        }
    )


def attention_csv(att: np.ndarray, tokens: Sequence[str], **kwargs: Any) -> bytes:
    return frame_csv(attention_frame(att, tokens, **kwargs))


def attention_json(
    att: np.ndarray,
    tokens: Sequence[str],
    *,
    model: str = "",
    unit: str = "words",
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
) -> bytes:
    """{"model", "unit", "tokens", "layers", "heads", "attention": [layer][head][query][key]}."""
    att = _check_attention(att, tokens)
    L, H = att.shape[:2]
    doc = {
        "model": model,
        "unit": unit,
        "tokens": list(tokens),
        "layers": list(layers) if layers is not None else list(range(1, L + 1)),
        "heads": list(heads) if heads is not None else list(range(1, H + 1)),
        "attention": np.round(att.astype(float), 6).tolist(),
    }
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------------- probe runs


def run_record(result: Any, *, command: str | None = None, data_hash: str | None = None) -> dict:
    """What reproduces one probe run (a ``probes.results.ProbeResult``): model and its content
    fingerprint, probe, seed, layers, the data (dataset, slice, hash), command, time, the rows."""
    params = dict(getattr(result, "params", {}) or {})
    extra = getattr(result, "extra", {}) or {}
    layers = params.get("layers")
    if layers is None:
        layers = list(dict.fromkeys(str(r["layer"]) for r in result.rows))
    return {
        "model": result.model,
        "fingerprint": result.fingerprint,
        "probe": result.probe,
        "seed": params.get("seed"),
        "layers": layers,
        "data": {
            "dataset": result.dataset,
            "limit": params.get("limit"),
            "hash": data_hash or extra.get("data_hash") or params.get("data_hash"),
        },
        "params": params,
        "command": command or result.command,
        "timestamp": result.timestamp,
        "rows": [dict(r) for r in result.rows],
    }


def run_record_json(results: Iterable[Any], *, command: str | None = None, data_hash: str | None = None) -> bytes:
    """A list of :func:`run_record` (a probe run and its baselines) as JSON bytes."""
    records = [run_record(r, command=command, data_hash=data_hash) for r in results]
    return json.dumps(records, ensure_ascii=False, indent=1, default=_jsonable).encode("utf-8")


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
