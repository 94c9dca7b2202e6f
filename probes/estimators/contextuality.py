"""How contextual is each layer? Ethayarajh (2019), "How Contextual are Contextualized Word Representations?".

For ONE word (the Polysemy explorer calls this) — ``vectors`` is (layers, n occurrences, dim):

    from probes.estimators.contextuality import word_profile
    word_profile(vectors)   # {"self_similarity": (layers,), "explainable_variance": (layers,)}

For a corpus — per-layer arrays, the rows grouped by word and by sentence:

    selection = select_words(word_keys, sentence_of_row, min_occurrences=5, max_occurrences=50, seed=0)
    row = layer_measures(X_layer, selection, offsets)   # one layer's measures: metric -> (value, n)

The measures, as Ethayarajh defines them, on the occurrences of a word w in n different sentences:

- **self-similarity**: the mean cosine between w's vectors in its n contexts (all n(n−1) ordered pairs);
  1 for a static model, lower the more a layer's vector of w depends on its context;
- **intra-sentence similarity**: per sentence, the mean cosine between each word's vector and the
  sentence's mean vector, averaged over sentences;
- **maximum explainable variance (MEV)**: σ₁² / Σσᵢ², the share of the variance of w's (uncentred)
  occurrence matrix that its first principal direction explains (singular values of the n × dim matrix).

Each is also given **adjusted for anisotropy**, by subtracting its baseline at that layer (as Ethayarajh
does): the mean cosine between the vectors of uniformly random pairs of occurrences of different words in
different sentences (``anisotropy``; the baseline of self- and intra-sentence similarity), and, for MEV, the
MEV of uniformly random occurrence sets — here size-matched: for every word, as many random occurrences as the word has
(MEV of a few rows is high whatever they are, so the baseline must see the same n). A word keeps at most one
occurrence per sentence ("in n unique contexts"); zero vectors (a static model's unknown word) are left out.
The probe (a corpus, SemCor or any text, every layer of a model; ``python -m probes contextuality``) is
``probes.tasks.contextuality``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MEASURES = ("self_similarity", "intra_sentence_similarity", "explainable_variance")
#: metric → the baseline it is adjusted by; "<metric>_adj" = metric − baseline.
BASELINE_OF = {
    "self_similarity": "anisotropy",
    "intra_sentence_similarity": "anisotropy",
    "explainable_variance": "mev_baseline",
}
METRICS = (*MEASURES, "anisotropy", "mev_baseline", *(f"{m}_adj" for m in MEASURES))


def _unit(X: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; zero rows dropped."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=-1)
    keep = norms > 0
    return X[keep] / norms[keep, None]


def self_similarity(X: np.ndarray) -> float:
    """Mean pairwise cosine of the rows of X (n, dim): (|Σuᵢ|² − n) / (n(n − 1)); NaN below 2 non-zero rows."""
    U = _unit(X)
    n = len(U)
    if n < 2:
        return float("nan")
    s = U.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


def explainable_variance(X: np.ndarray) -> float:
    """σ₁² / Σσᵢ² of the (uncentred) rows of X; NaN for no non-zero row."""
    X = np.asarray(X, dtype=np.float64)
    X = X[np.linalg.norm(X, axis=-1) > 0]
    if len(X) == 0:
        return float("nan")
    sv = np.linalg.svd(X, compute_uv=False)
    return float(sv[0] ** 2 / np.sum(sv**2))


def intra_sentence_similarity(X: np.ndarray) -> float:
    """Mean cosine between each row of one sentence's X (words, dim) and the sentence's mean vector."""
    X = np.asarray(X, dtype=np.float64)
    X = X[np.linalg.norm(X, axis=-1) > 0]
    if len(X) < 2:
        return float("nan")
    mean = X.mean(axis=0)
    norm = np.linalg.norm(mean)
    if norm == 0:
        return 0.0
    return float((_unit(X) @ (mean / norm)).mean())


def word_profile(vectors: np.ndarray) -> dict[str, np.ndarray]:
    """One word's occurrences (layers, n, dim) → self-similarity and MEV per layer (unadjusted; a
    corpus's baselines per layer are in a saved contextuality result, metric "anisotropy"/"mev_baseline")."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 3:
        raise ValueError(f"word_profile needs (layers, occurrences, dim) vectors, got shape {vectors.shape}.")
    if vectors.shape[1] < 2:
        raise ValueError("Self-similarity needs at least 2 occurrences of the word.")
    return {
        "self_similarity": np.array([self_similarity(v) for v in vectors]),
        "explainable_variance": np.array([explainable_variance(v) for v in vectors]),
    }


@dataclass(frozen=True)
class Selection:
    """Which rows are measured (the same at every layer): each word's occurrence rows, the random
    occurrence pairs of the anisotropy baseline and the random row sets of the MEV baseline."""

    words: tuple[str, ...]
    rows: tuple[np.ndarray, ...]  # per word: global row indices, one per sentence
    pairs: np.ndarray  # (P, 2) rows of different words from different sentences
    random_sets: tuple[np.ndarray, ...]  # per word: as many uniformly random rows as it has occurrences


def select_words(
    word_keys: np.ndarray,
    sentence_of_row: np.ndarray,
    *,
    min_occurrences: int = 5,
    max_occurrences: int | None = 50,
    max_words: int | None = None,
    words: list[str] | None = None,
    pairs: int = 2000,
    seed: int = 0,
) -> Selection:
    """The seeded selection of ``word_keys`` (one key per row, "" = not a word) to measure.

    A word qualifies with ≥ ``min_occurrences`` sentences containing it (its first occurrence in each);
    ``max_occurrences`` caps its sentences (a seeded sample), ``max_words`` the number of words, and
    ``words`` restricts to those keys. ValueError when no word qualifies.
    """
    if min_occurrences < 2:
        raise ValueError(
            f"min_occurrences must be at least 2 (a similarity needs two contexts), got {min_occurrences}."
        )
    rng = np.random.default_rng(seed)
    keys = np.asarray(word_keys, dtype=object)
    valid = np.flatnonzero(keys != "")
    # first occurrence of each (word, sentence)
    pair_keys = np.array([f"{keys[i]}\t{sentence_of_row[i]}" for i in valid], dtype=object)
    _, first = np.unique(pair_keys, return_index=True)
    rows = valid[np.sort(first)]
    by_word: dict[str, list[int]] = {}
    for r in rows:
        by_word.setdefault(keys[r], []).append(int(r))
    wanted = set(words) if words else None
    chosen = sorted(w for w, rs in by_word.items() if len(rs) >= min_occurrences and (wanted is None or w in wanted))
    if not chosen:
        where = f" among {sorted(wanted)[:10]}" if wanted else ""
        raise ValueError(f"No word{where} occurs in at least {min_occurrences} sentences of this corpus.")
    if max_words is not None and len(chosen) > max_words:
        chosen = sorted(rng.choice(chosen, size=max_words, replace=False).tolist())
    word_rows = []
    for w in chosen:
        rs = np.array(by_word[w])
        if max_occurrences is not None and len(rs) > max_occurrences:
            rs = np.sort(rng.choice(rs, size=max_occurrences, replace=False))
        word_rows.append(rs)
    a, b = rng.choice(valid, size=(2, 4 * pairs))
    different = (sentence_of_row[a] != sentence_of_row[b]) & (keys[a] != keys[b])  # different words and contexts
    pair_rows = np.stack([a[different], b[different]], axis=1)[:pairs]
    random_sets = tuple(rng.choice(valid, size=len(rs), replace=False) for rs in word_rows)
    return Selection(tuple(chosen), tuple(word_rows), pair_rows, random_sets)


def anisotropy(X: np.ndarray, pairs: np.ndarray) -> float:
    """Mean cosine of the row pairs (zero rows left out)."""
    A, B = np.asarray(X[pairs[:, 0]], np.float64), np.asarray(X[pairs[:, 1]], np.float64)
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    ok = (na > 0) & (nb > 0)
    if not ok.any():
        return float("nan")
    return float(np.mean(np.sum(A[ok] * B[ok], axis=1) / (na[ok] * nb[ok])))


def layer_measures(X: np.ndarray, selection: Selection, offsets: np.ndarray) -> dict[str, tuple[float, int]]:
    """Every metric of ``METRICS`` at one layer (X: (rows, dim)): metric → (value, n measured)."""
    ss = np.array([self_similarity(X[rs]) for rs in selection.rows])
    mev = np.array([explainable_variance(X[rs]) for rs in selection.rows])
    base = np.array([explainable_variance(X[rs]) for rs in selection.random_sets])
    intra = np.array([intra_sentence_similarity(X[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)])
    out = {
        "self_similarity": _mean(ss),
        "explainable_variance": _mean(mev),
        "intra_sentence_similarity": _mean(intra),
        "anisotropy": (anisotropy(X, selection.pairs), len(selection.pairs)),
        "mev_baseline": _mean(base),
    }
    for metric, baseline in BASELINE_OF.items():
        value, n = out[metric]
        out[f"{metric}_adj"] = (value - out[baseline][0], n)
    return out


def _mean(values: np.ndarray) -> tuple[float, int]:
    ok = values[~np.isnan(values)]
    return (float(ok.mean()) if len(ok) else float("nan"), int(len(ok)))
