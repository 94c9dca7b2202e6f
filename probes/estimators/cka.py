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

**Uncertainty** (``cka_interval``): a 95% bootstrap interval per cell over *sentences* (the words of a
sentence are not independent): each of ``RESAMPLES`` (200) resamples draws the sentences with replacement
and recomputes linear CKA on all their words (a word counted as often as its sentence was drawn). All
resamples of a cell come from the sentence-block sums of the Gram matrices XXᵀ∘YYᵀ and XXᵀ·m (weighted
centring), so a cell costs O(words²) once and O(sentences²) per resample: 7 layers, 3,000 words of 500
sentences, 200 resamples take about 10 s on 2 cores (``tests/test_uncertainty.py`` checks it against a plain
loop); memory: one words × words Gram matrix per layer (the probe caps the words at 4,000). A resample
repeats words, and linear CKA is biased upward on few distinct rows (its HSIC terms are the biased
estimator), so the bootstrap distribution sits above the estimate by that bias (a plain percentile interval
missed the value in 2 of 30 cells of elmo-small × minilm on 40 sentences); the interval is the percentile
interval of the resamples shifted by their mean minus the estimate. It is thus an interval for linear CKA
*as measured on this many words* (what the value reports), centred on the value; the finite-sample bias of
linear CKA itself is not corrected (debiased CKA would change every value).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix

from probes.stats.intervals import LEVEL

RESAMPLES = 200  # bootstrap resamples of sentences (a cell costs O(S²) per resample, S sentences)


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


def cka_interval(
    layers_a: Sequence[np.ndarray],
    layers_b: Sequence[np.ndarray] | None,
    groups: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval (lo, hi), each (len(a), len(b)), of ``cka_matrix(layers_a, layers_b)``
    resampling the groups of rows (``groups[i]``: row i's sentence) with replacement; see the module doc."""
    codes = np.unique(np.asarray(groups), return_inverse=True)[1]
    G_a = [_gram(X) for X in layers_a]
    G_b = G_a if layers_b is None else [_gram(Y) for Y in layers_b]
    if len(codes) != len(G_a[0]) or any(len(G) != len(codes) for G in G_a + G_b):
        raise ValueError("CKA's bootstrap needs one group per row of every layer.")
    S = int(codes.max()) + 1
    if S < 2:  # one sentence: every resample is that sentence, no interval
        return np.full((len(G_a), len(G_b)), np.nan), np.full((len(G_a), len(G_b)), np.nan)
    P = csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(S, len(codes)))  # group sums
    W = np.random.default_rng(seed).multinomial(S, np.full(S, 1.0 / S), size=resamples).T.astype(np.float64)
    M = W[codes]  # (rows, R): each row's multiplicity in each resample
    N = M.sum(axis=0)
    GM_a = [(P @ G).T @ W for G in G_a]  # G m per resample, (rows, R) (every G is symmetric)
    GM_b = GM_a if layers_b is None else [(P @ G).T @ W for G in G_b]

    def hsic(Ga, Gb, GMa, GMb):  # ‖X̃ᵀ D Ỹ‖²_F of every resample (D: the multiplicities, weighted centring)
        H = P @ (P @ (Ga * Gb)).T  # (S, S): the sums over sentence blocks
        mGm_a, mGm_b = np.einsum("ir,ir->r", M, GMa), np.einsum("ir,ir->r", M, GMb)
        return np.einsum("sr,sr->r", W, H @ W) - 2 * np.einsum("ir,ir,ir->r", M, GMa, GMb) / N + mGm_a * mGm_b / N**2

    self_a = [hsic(G, G, GM, GM) for G, GM in zip(G_a, GM_a)]
    self_b = self_a if layers_b is None else [hsic(G, G, GM, GM) for G, GM in zip(G_b, GM_b)]
    draws = np.empty((len(G_a), len(G_b), resamples))
    for i in range(len(G_a)):
        for j in range(len(G_b)):
            if layers_b is None and j < i:
                draws[i, j] = draws[j, i]
                continue
            cross = hsic(G_a[i], G_b[j], GM_a[i], GM_b[j])
            draws[i, j] = cross / np.sqrt(self_a[i] * self_b[j])
    # centred on the estimate: resampled rows repeat, which biases a resample's CKA upward (see the module doc); a
    # resample on which a layer is constant (0/0) is undefined, and left out here and below, as grouped_interval does
    draws -= np.nanmean(draws, axis=2, keepdims=True) - cka_matrix(layers_a, layers_b)[..., None]
    lo, hi = np.nanpercentile(draws, [50 * (1 - level), 50 * (1 + level)], axis=2)
    return lo, hi


def _gram(X: np.ndarray) -> np.ndarray:
    """X Xᵀ of the rows centred by their mean (the weighted centring in ``cka_interval`` does the rest)."""
    X = _centred(X)
    return X @ X.T
