"""Summaries of attention maps for the Attention page.

att arrays are (layers, heads, n, n) with rows (queries) summing to 1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


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
        rows.append({"query": tokens[i], "key": tokens[j], "weight": round(float(a[i, j]), 4),
                     "query position": i + 1, "key position": j + 1})
    return pd.DataFrame(rows)
