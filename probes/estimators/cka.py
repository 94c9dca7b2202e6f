"""Linear CKA (Kornblith et al. 2019, "Similarity of Neural Network Representations Revisited").

    cka_matrix([X0, X1, X2])               # (3, 3): every layer of one model against every other
    cka_matrix(layers_a, layers_b)         # (La, Lb): two models on the SAME words (row i = word i in both)

The ``cka`` probe (``probes.tasks.cka``) embeds a corpus and calls this.

For representations X (n × p) and Y (n × q) of the same n words, both centred per column,

    CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F · ‖YᵀY‖_F)

(the paper's linear CKA). It is 1 for X against itself, invariant to an
orthogonal transform and to an isotropic scaling of either side (not to any invertible linear map), and
defined across different widths p ≠ q. Computed in feature space (p × p products), so cost grows with the
number of words only linearly; float64 throughout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _centred(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"CKA needs (words, dim) matrices, got shape {X.shape}.")
    return X - X.mean(axis=0, keepdims=True)


def linear_cka(X: np.ndarray, Y: np.ndarray) -> float:
    """CKA of two representations of the same rows; ValueError for different row counts or a constant side."""
    return float(cka_matrix([X], [Y])[0, 0])


def cka_matrix(layers_a: Sequence[np.ndarray], layers_b: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """(len(a), len(b)) CKA between every pair of layers; ``layers_b`` None = ``layers_a`` (symmetric)."""
    A = [_centred(X) for X in layers_a]
    B = A if layers_b is None else [_centred(Y) for Y in layers_b]
    n = {len(X) for X in A} | {len(Y) for Y in B}
    if len(n) != 1:
        raise ValueError(f"CKA compares the same words: the layers have {sorted(n)} rows.")
    if n.pop() < 2:
        raise ValueError("CKA needs at least 2 words.")
    norm_a = np.array([np.linalg.norm(X.T @ X) for X in A])
    norm_b = norm_a if layers_b is None else np.array([np.linalg.norm(Y.T @ Y) for Y in B])
    if (norm_a == 0).any() or (norm_b == 0).any():
        raise ValueError("A layer is constant over these words (all rows equal): CKA is undefined.")
    out = np.empty((len(A), len(B)))
    for i, X in enumerate(A):
        for j, Y in enumerate(B):
            if layers_b is None and j < i:
                out[i, j] = out[j, i]
                continue
            out[i, j] = np.linalg.norm(Y.T @ X) ** 2 / (norm_a[i] * norm_b[j])
    return out
