"""Projections of vectors to 2-D/3-D and cosine neighbourhoods, for the app's plots.

coords, note = project(X, "PCA", dims=2)          # X: (n, dim) -> coords: (n, 2)
cosine_neighbours(X, i=0, k=5)                     # [(j, cos), ...] nearest first, i excluded
"""

from __future__ import annotations

import numpy as np

METHODS = ("PCA", "t-SNE", "UMAP")


def _pad(coords: np.ndarray, n: int, dims: int) -> np.ndarray:
    out = np.zeros((n, dims), np.float32)
    out[:, : coords.shape[1]] = coords[:, :dims]
    return out


def is_degenerate(X: np.ndarray, tol: float = 1e-6) -> bool:
    """True when all rows are (numerically) the same vector — e.g. a static model's occurrences."""
    X = np.asarray(X, np.float64)
    return X.shape[0] < 2 or float(np.abs(X - X[:1]).max(initial=0.0)) <= tol * (
        1.0 + float(np.abs(X).max(initial=0.0))
    )


def project(X: np.ndarray, method: str = "PCA", dims: int = 2, seed: int = 0) -> tuple[np.ndarray, str]:
    """Project rows of ``X`` (n, dim) to ``dims`` (2 or 3) coordinates.

    Returns (coords (n, dims) float32, note). The note explains any fallback: fewer than a
    handful of points cannot be laid out by t-SNE/UMAP, so PCA is used; identical points give
    zeros. Deterministic for a fixed seed.
    """
    if method not in METHODS:
        raise ValueError(f"Unknown projection '{method}'; choose one of {', '.join(METHODS)}.")
    if dims not in (2, 3):
        raise ValueError("dims must be 2 or 3.")
    X = np.asarray(X, np.float32)
    if X.ndim != 2:
        raise ValueError(f"Expected a (points, dim) matrix, got shape {X.shape}.")
    n = X.shape[0]
    if n == 0:
        return np.zeros((0, dims), np.float32), ""
    if is_degenerate(X):
        return np.zeros((n, dims), np.float32), "All points are the same vector, so they are drawn at one spot."
    note = ""
    if method != "PCA" and n < 6:
        method, note = "PCA", f"{n} points are too few for t-SNE/UMAP; PCA is shown instead."

    if method == "PCA":
        from sklearn.decomposition import PCA  # lazy: sklearn takes seconds to import; only a drawn projection needs it

        k = min(dims, n, X.shape[1])
        coords = PCA(n_components=k, random_state=seed).fit_transform(X)
    elif method == "t-SNE":
        from sklearn.manifold import TSNE  # lazy: sklearn, as above

        perplexity = float(min(30.0, max(2.0, (n - 1) / 3.0)))
        # 500 iterations (sklearn's default is 1000) and the exact gradient (faster than Barnes-Hut
        # below ~500 points, and better in 3-D) keep a few hundred points at a few seconds.
        coords = TSNE(
            n_components=dims,
            perplexity=perplexity,
            init="pca",
            metric="cosine",
            max_iter=500,
            method="exact" if n <= 500 else "barnes_hut",
            random_state=seed,
        ).fit_transform(X)
    else:
        import umap  # lazy: umap (numba) takes seconds to import and compile

        coords = umap.UMAP(
            n_components=dims,
            n_neighbors=int(min(15, n - 1)),
            metric="cosine",
            random_state=seed,
            init="random" if n <= dims + 1 else "spectral",
        ).fit_transform(X)
    return _pad(np.asarray(coords, np.float32), n, dims), note


def project_layers(
    X: np.ndarray, method: str = "PCA", dims: int = 2, seed: int = 0, distinct: list[np.ndarray] | None = None
) -> tuple[np.ndarray, list[str]]:
    """Projections of every layer of ``X`` (layers, n, dim) at once: (coords (layers, n, dims), notes).

    ``distinct[layer]``: indices of the rows to lay out (the others copy the coordinates of an equal
    row: see ``viz.points.collapse``), given as ``inverse`` arrays mapping each row to its distinct row.
    Pages cache the result per (model, word, method, dims), so a layer slider step only draws.
    """
    X = np.asarray(X, np.float32)
    if X.ndim != 3:
        raise ValueError(f"Expected (layers, points, dim) vectors, got shape {X.shape}.")
    L, n = X.shape[:2]
    out = np.zeros((L, n, dims), np.float32)
    notes: list[str] = []
    for layer in range(L):
        if distinct is None:
            coords, note = project(X[layer], method, dims, seed)
        else:
            inverse = np.asarray(distinct[layer])
            first = np.full(int(inverse.max(initial=-1)) + 1, -1, np.int64)
            for i in range(n - 1, -1, -1):
                first[inverse[i]] = i
            rep_coords, note = project(X[layer][first], method, dims, seed)
            coords = rep_coords[inverse]
        out[layer] = coords
        notes.append(note)
    return out, notes


def normalize_rows(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, np.float32)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.maximum(norms, 1e-12)


def cosine_matrix(X: np.ndarray) -> np.ndarray:
    Xn = normalize_rows(X)
    return Xn @ Xn.T


def cosine_neighbours(X: np.ndarray, i: int, k: int = 10) -> list[tuple[int, float]]:
    """The ``k`` rows most cosine-similar to row ``i`` (excluding ``i``), nearest first."""
    n = X.shape[0]
    if not 0 <= i < n:
        raise IndexError(f"Point {i} is out of range (0..{n - 1}).")
    Xn = normalize_rows(X)
    sims = Xn @ Xn[i]
    sims[i] = -np.inf
    order = np.argsort(-sims, kind="stable")[: max(0, min(k, n - 1))]
    return [(int(j), float(sims[j])) for j in order]


def nn_label_agreement(X: np.ndarray, labels: list) -> float:
    """Fraction of points whose nearest other point (cosine) has the same label.

    A leave-one-out 1-NN accuracy: high when the space separates the labels (senses). Points
    with label None are skipped. NaN when fewer than 2 labelled points.
    """
    keep = [i for i, lab in enumerate(labels) if lab is not None]
    if len(keep) < 2:
        return float("nan")
    Xk = np.asarray(X, np.float32)[keep]
    labs = [labels[i] for i in keep]
    if is_degenerate(Xk):
        # Every point is equally near every other: the expected agreement of a random neighbour.
        counts = {}
        for lab in labs:
            counts[lab] = counts.get(lab, 0) + 1
        n = len(labs)
        return float(sum(c * (c - 1) for c in counts.values()) / (n * (n - 1)))
    S = cosine_matrix(Xk)
    np.fill_diagonal(S, -np.inf)
    nn = S.argmax(axis=1)
    return float(np.mean([labs[i] == labs[j] for i, j in enumerate(nn)]))
