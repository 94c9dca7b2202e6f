"""Linear CKA (Kornblith et al. 2019, "Similarity of Neural Network Representations Revisited").

    cka_matrix([X0, X1, X2])               # (3, 3): every layer of one model against every other
    cka_matrix(layers_a, layers_b)         # (La, Lb): two models on the SAME words (row i = word i in both)
    layer_cka(emb_a, emb_b, sentences)     # the same from two embedders and a list of sentences

For representations X (n × p) and Y (n × q) of the same n words, both centred per column,

    CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F · ‖YᵀY‖_F)

(the paper's linear CKA). It is 1 for X against itself, invariant to an
orthogonal transform and to an isotropic scaling of either side (not to any invertible linear map), and
defined across different widths p ≠ q. Computed in feature space (p × p products), so cost grows with the
number of words only linearly; float64 throughout.
"""
from __future__ import annotations

from typing import Sequence

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


def layer_cka(emb_a, emb_b, sentences: Sequence[Sequence[str]], max_words: int | None = 5000,
              seed: int = 0) -> np.ndarray:
    """CKA matrix between the layers of ``emb_a`` and ``emb_b`` (the same model: within it) on the words of
    ``sentences``; at most ``max_words`` words (a seeded sample of rows, the same for both)."""
    sentences = [list(map(str, s)) for s in sentences if len(s)]
    if not sentences:
        raise ValueError("CKA needs at least one sentence.")

    def layers(emb) -> list[np.ndarray]:
        outs = emb.embed(sentences)
        return [np.concatenate([o.vectors[j] for o in outs]) for j in range(emb.num_layers)]

    a = layers(emb_a)
    b = a if emb_b is emb_a else layers(emb_b)
    total = len(a[0])
    if max_words is not None and total > max_words:
        rows = np.sort(np.random.default_rng(seed).choice(total, size=max_words, replace=False))
        a = [X[rows] for X in a]
        b = a if emb_b is emb_a else [Y[rows] for Y in b]
    return cka_matrix(a, None if emb_b is emb_a else b)
