"""bertviz's neuron view: how one head's query and key vectors make an attention weight.

For a query piece and a key piece at one layer and head: the query vector q, the key vector k, their
elementwise product q∘k (one bar per dimension: which dimensions pull the two together, which apart),
and its sum q·k, which times the head's scale (1/√d_head) is the score before the softmax
(:func:`pair_figure`). :func:`keys_figure` shows q∘k for every key at once (a heatmap, a row per key)
beside each key's score, whose softmax over the keys is the attention row the other views draw.

The vectors come from ``models.transformer.qk`` through the page (viz takes arrays, never a model).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from viz.text import escape_html, shorten

TEMPLATE = pio.templates["plotly_white"]
DIVERGING = "RdBu"  # red negative, blue positive, white 0 (zmid)
POSITIVE, NEGATIVE = "#2166ac", "#b2182b"


def _symmetric(values: np.ndarray) -> float:
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def pair_frame(q: np.ndarray, k: np.ndarray) -> pd.DataFrame:
    """Per dimension: q, k and q×k (their sum is q·k), the pair figure's data."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    return pd.DataFrame({"dimension": np.arange(1, len(q) + 1), "q": q, "k": k, "q×k": q * k})


def key_scores(q: np.ndarray, keys: np.ndarray, scale: float, query: int, causal: bool) -> np.ndarray:
    """Each key's score q·k × scale before the softmax; NaN for keys a causal model's query cannot see."""
    scores = np.asarray(keys, np.float64) @ np.asarray(q, np.float64) * scale
    if causal:
        scores[query + 1 :] = np.nan
    return scores


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the finite scores (NaN = masked: weight 0)."""
    seen = np.isfinite(scores)
    out = np.zeros(scores.shape)
    if seen.any():
        e = np.exp(scores[seen] - scores[seen].max())
        out[seen] = e / e.sum()
    return out


def pair_figure(
    q: np.ndarray,
    k: np.ndarray,
    scale: float,
    *,
    query_label: str,
    key_label: str,
    weight: float | None = None,
    title: str | None = None,
) -> go.Figure:
    """q and k as two heatmap rows (one colour scale, 0 white), q∘k as bars below; the title sums them."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    if q.shape != k.shape or q.ndim != 1:
        raise ValueError(f"q and k must be vectors of one length, got {q.shape} and {k.shape}")
    prod = q * k
    dims = np.arange(1, len(q) + 1)
    dot = float(prod.sum())
    top = _symmetric(np.concatenate([q, k]))
    labels = [f"q  {escape_html(shorten(query_label, 16))}", f"k  {escape_html(shorten(key_label, 16))}"]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.38, 0.62], vertical_spacing=0.06)
    fig.add_trace(
        go.Heatmap(
            z=[q, k],
            x=dims,
            y=labels,
            colorscale=DIVERGING,
            zmid=0,
            zmin=-top,
            zmax=top,
            colorbar=dict(title=dict(text="q, k"), thickness=10, len=0.38, y=1, yanchor="top"),
            hovertemplate="%{y}, dimension %{x}: %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=dims,
            y=prod,
            marker=dict(color=[POSITIVE if v >= 0 else NEGATIVE for v in prod]),
            customdata=np.column_stack([q, k]),
            hovertemplate="dimension %{x}: q %{customdata[0]:.3f} × k %{customdata[1]:.3f} = %{y:.3f}<extra></extra>",
            showlegend=False,
        ),
        row=2,
        col=1,
    )
    summary = f"Σ q×k = q·k = {dot:.3f};  × {scale:.4g} = score {dot * scale:.3f}"
    if weight is not None:
        summary += f"  →  weight {weight:.3f} after the softmax"
    fig.update_yaxes(autorange="reversed", row=1, col=1)  # q above k
    fig.update_yaxes(title=dict(text="q×k"), zeroline=True, zerolinecolor="#444", row=2, col=1)
    fig.update_xaxes(title=dict(text="dimension of the head"), row=2, col=1)
    fig.update_layout(
        template=TEMPLATE,
        height=380,
        margin=dict(l=10, r=10, t=70, b=10),
        title=dict(text=f"{escape_html(title) + '<br>' if title else ''}<sup>{summary}</sup>", x=0),
        bargap=0.1,
    )
    return fig


def keys_figure(
    q: np.ndarray,
    keys: np.ndarray,
    scale: float,
    tokens: Sequence[str],
    query: int,
    *,
    key: int | None = None,
    causal: bool = False,
    title: str | None = None,
) -> go.Figure:
    """q∘k for every key (rows) over the dimensions, beside each key's score (bars, its weight as text).

    Keys a causal query cannot see are blank. The selected ``key`` is marked in red."""
    keys = np.asarray(keys, np.float64)
    n = len(tokens)
    if keys.shape[0] != n or keys.shape[1] != len(q):
        raise ValueError(f"Keys of shape {keys.shape} do not match {n} tokens and a query of {len(q)} dimensions")
    scores = key_scores(q, keys, scale, query, causal)
    weights = softmax(scores)
    prod = keys * np.asarray(q, np.float64)[None]
    prod[~np.isfinite(scores)] = np.nan
    labels = [f"{i + 1}: {escape_html(shorten(str(t), 14))}" for i, t in enumerate(tokens)]
    top = _symmetric(prod)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.7, 0.3], horizontal_spacing=0.03)
    fig.add_trace(
        go.Heatmap(
            z=prod,
            x=np.arange(1, keys.shape[1] + 1),
            y=labels,
            colorscale=DIVERGING,
            zmid=0,
            zmin=-top,
            zmax=top,
            colorbar=dict(title=dict(text="q×k"), thickness=10, x=1.01, xanchor="left"),
            hovertemplate="key %{y}, dimension %{x}: q×k %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=scores,
            y=labels,
            orientation="h",
            marker=dict(color=["#d62728" if i == key else "#7f7f7f" for i in range(n)]),
            text=[f"{w:.2f}" if np.isfinite(s) else "" for w, s in zip(weights, scores)],
            textposition="outside",
            cliponaxis=False,
            customdata=weights,
            hovertemplate="key %{y}: score %{x:.3f}, weight %{customdata:.3f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(title=dict(text="dimension"), row=1, col=1)
    fig.update_xaxes(title=dict(text="score (weight as text)"), zeroline=True, zerolinecolor="#444", row=1, col=2)
    fig.update_layout(
        template=TEMPLATE,
        height=min(900, max(300, 20 * n + 110)),
        margin=dict(l=10, r=70, t=50 if title else 20, b=10),
        title=dict(text=escape_html(title) if title else None, x=0),
    )
    return fig


def keys_frame(q: np.ndarray, keys: np.ndarray, scale: float, tokens: Sequence[str], query: int, causal: bool):
    """Per key: its score q·k × scale and its softmax weight, the keys figure's data."""
    scores = key_scores(q, keys, scale, query, causal)
    return pd.DataFrame(
        {"key position": np.arange(1, len(tokens) + 1), "key": list(tokens), "score": scores, "weight": softmax(scores)}
    )
