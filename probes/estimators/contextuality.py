"""How contextual is each layer? Ethayarajh (2019), "How Contextual are Contextualized Word Representations?".

For ONE word (the Polysemy explorer calls this) — ``vectors`` is (layers, n occurrences, dim):

    from probes.estimators.contextuality import word_profile
    word_profile(vectors)   # {"self_similarity": (layers,), "explainable_variance": (layers,)}

For a corpus — per-layer arrays, the rows grouped by word and by sentence:

    selection = select_words(word_keys, sentence_of_row, min_occurrences=5, max_occurrences=50, seed=0)
    row = layer_measures(X_layer, selection, offsets)   # metric -> {"value", "n", "lo", "hi", "unit", "clusters"}

The measures, as Ethayarajh defines them, on the occurrences of a word w in n different sentences:

- **self-similarity**: the mean cosine between w's vectors in its n contexts (all n(n−1) ordered pairs);
  1 for a static model, lower the more a layer's vector of w depends on its context;
- **intra-sentence similarity**: per sentence, the mean cosine between each word's vector and the
  sentence's mean vector, averaged over sentences (its words: rows with a key, as the anisotropy's pairs;
  a sentence of fewer than two is left out);
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

**Uncertainty** (issue 26): every measure comes with a 95% interval, its unit and its number of units.

- self-similarity and MEV are means over the measured *words*: percentile bootstrap over words
  (``RESAMPLES`` = 1,000 resamples of the words with replacement, each word with all its occurrences);
  intra-sentence similarity is a mean over *sentences*: the same bootstrap over sentences;
- the baselines are Monte-Carlo estimates: the anisotropy draws random pairs from a seeded stream
  (``Selection.pairs``) until the standard error of their mean cosine, sd/√pairs, is below ``TARGET_SE`` =
  0.0005 (half a unit of the third decimal the tables print; at least ``--pairs``, at most ``MAX_PAIRS``),
  the MEV baseline draws rounds of size-matched random sets (one per word a round, ``Selection.random_sets``)
  until the SE of its mean, √(Σ_w s_w²/R)/W (s_w: the spread of word w's R rounds), is below 0.0005 (at most
  ``MAX_ROUNDS`` rounds: with few words, e.g. 50, it may stop above 0.0005). Their rows carry "se" and the
  normal interval ± 1.96 SE (unit "pair" / "random set", clusters = pairs / sets drawn); the number of
  pairs or sets is the SE's choice, so it differs between layers;
- adjusted = measure − baseline: self- and intra-sentence similarity subtract the anisotropy, whose
  Monte-Carlo error enters each resample as an independent normal draw (mean ± SE·z); adjusted MEV is the
  mean MEV over words minus the mean over words of their own random sets' mean MEV (the mean of the per-word
  differences but where a word has no MEV, e.g. a static model's all-zero word), bootstrapped over words as pairs.

The resampled words and sentences are the same at every layer (seeded by the selection's seed), so layers
are compared on the same resamples. The intervals are for this corpus slice
and this seeded sample of words; they do not cover another choice of corpus.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm

from probes.stats.intervals import LEVEL

MEASURES = ("self_similarity", "intra_sentence_similarity", "explainable_variance")
METRICS = (*MEASURES, "anisotropy", "mev_baseline", *(f"{m}_adj" for m in MEASURES))
#: What each metric's number is (its unit, for a chart's axis): a mean cosine or a share of variance, an adjusted
#: one minus its baseline.
QUANTITY = {
    "self_similarity": "cosine",
    "intra_sentence_similarity": "cosine",
    "explainable_variance": "variance share",
    "anisotropy": "cosine",
    "mev_baseline": "variance share",
    "self_similarity_adj": "cosine − anisotropy",
    "intra_sentence_similarity_adj": "cosine − anisotropy",
    "explainable_variance_adj": "variance share − MEV baseline",
}
RESAMPLES = 1000  # bootstrap resamples of words / sentences
TARGET_SE = 0.0005  # a baseline's Monte-Carlo SE stays below half a unit of the printed third decimal
MIN_PAIRS, MAX_PAIRS, PAIR_BLOCK = 2000, 2_000_000, 50_000  # random pairs of the anisotropy baseline
MIN_ROUNDS, MAX_ROUNDS = 4, 200  # random sets per word of the MEV baseline (the cap: see its row's se)


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
    """Which rows are measured (the same at every layer): each word's occurrence rows, and the seeded
    streams of random rows the baselines draw from (``pairs(count)``, ``random_sets(round)``)."""

    words: tuple[str, ...]
    rows: tuple[np.ndarray, ...]  # per word: global row indices, one per sentence
    keys: np.ndarray  # word key of every row ("" = not measured)
    sentence_of_row: np.ndarray
    seed: int = 0
    _blocks: dict = field(default_factory=dict, compare=False, repr=False)

    def pairs(self, count: int) -> np.ndarray:
        """The first ``count`` of a seeded stream of row pairs (different words, different sentences);
        fewer (or none) only when the corpus has no such pair. The same prefix for every ``count``."""
        valid = np.flatnonzero(self.keys != "")
        blocks: list[np.ndarray] = []
        while sum(map(len, blocks)) < count:
            b = len(blocks)
            if b not in self._blocks:
                a, c = np.random.default_rng([self.seed, 1, b]).choice(valid, size=(2, 2 * PAIR_BLOCK))
                ok = (self.sentence_of_row[a] != self.sentence_of_row[c]) & (self.keys[a] != self.keys[c])
                self._blocks[b] = np.stack([a[ok], c[ok]], axis=1)[:PAIR_BLOCK]
            blocks.append(self._blocks[b])
            if not len(blocks[0]):
                break
        return np.concatenate(blocks)[:count] if blocks else np.empty((0, 2), np.int64)

    def random_sets(self, round_: int) -> tuple[np.ndarray, ...]:
        """Round ``round_`` of the MEV baseline: per word, as many uniformly random rows as it has."""
        rng = np.random.default_rng([self.seed, 2, round_])
        valid = np.flatnonzero(self.keys != "")
        return tuple(rng.choice(valid, size=len(rs), replace=False) for rs in self.rows)


def select_words(
    word_keys: np.ndarray,
    sentence_of_row: np.ndarray,
    *,
    min_occurrences: int = 5,
    max_occurrences: int | None = 50,
    max_words: int | None = None,
    words: list[str] | None = None,
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
    sentence_of_row = np.asarray(sentence_of_row)
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
    return Selection(tuple(chosen), tuple(word_rows), keys, sentence_of_row, seed)


def pair_cosines(X: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Cosine of each row pair (pairs with a zero row left out): dot products of unit rows (float32, summed
    in float64 by the callers), in chunks of ``PAIR_BLOCK``."""
    X = np.asarray(X, dtype=np.float32)
    norms = np.linalg.norm(X, axis=1)
    U = X / np.where(norms > 0, norms, 1.0)[:, None]
    pairs = pairs[(norms[pairs[:, 0]] > 0) & (norms[pairs[:, 1]] > 0)]
    chunks = [pairs[i : i + PAIR_BLOCK] for i in range(0, len(pairs), PAIR_BLOCK)]
    return np.concatenate([np.einsum("ij,ij->i", U[c[:, 0]], U[c[:, 1]]).astype(np.float64) for c in chunks] or [[]])


def explainable_variances(X: np.ndarray, sets: Sequence[np.ndarray]) -> np.ndarray:
    """``explainable_variance(X[s])`` for every row set s, batched by set size: σ₁²/Σσᵢ² is the top
    eigenvalue of the (n × n or d × d) Gram matrix over its trace; zero rows change neither."""
    out = np.full(len(sets), np.nan)
    sizes = np.array([len(s) for s in sets])
    for n in np.unique(sizes):
        same = np.flatnonzero(sizes == n)
        for chunk in np.array_split(same, 1 + len(same) * n * X.shape[1] // 2_000_000):
            A = np.asarray(X[np.stack([sets[i] for i in chunk])], np.float64)  # (k, n, dim)
            G = A @ A.transpose(0, 2, 1) if n <= A.shape[2] else A.transpose(0, 2, 1) @ A
            trace = np.trace(G, axis1=1, axis2=2)
            top = np.linalg.eigvalsh(G)[:, -1]
            out[chunk] = np.where(trace > 0, top / np.where(trace > 0, trace, 1.0), np.nan)
    return out


def layer_measures(
    X: np.ndarray,
    selection: Selection,
    offsets: np.ndarray,
    *,
    min_pairs: int = MIN_PAIRS,
    target_se: float = TARGET_SE,
    resamples: int = RESAMPLES,
) -> dict[str, dict]:
    """Every metric of ``METRICS`` at one layer (X: (rows, dim)): metric → {"value", "n", "lo", "hi",
    "unit", "clusters"} (+ "se" for the two baselines), as the module doc describes."""
    rng = np.random.default_rng([selection.seed, 3])  # the same resamples at every layer
    ss = np.array([self_similarity(X[rs]) for rs in selection.rows])
    mev = explainable_variances(X, selection.rows)
    # over the words the baselines draw from (punctuation is never measured): the anisotropy subtracted from it
    # had left punctuation out while the measure kept it (-0.039 to +0.030 of a difference per layer)
    measured = selection.keys != ""
    intra = np.array(
        [
            intra_sentence_similarity(X[offsets[i] : offsets[i + 1]][measured[offsets[i] : offsets[i + 1]]])
            for i in range(len(offsets) - 1)
        ]
    )
    cos = _baseline_pairs(X, selection, min_pairs, target_se)
    base = _baseline_sets(X, selection, target_se)  # (rounds, words)
    base_w = _nanmean(base, axis=0)
    words, sentences = _weights(len(ss), resamples, rng), _weights(len(intra), resamples, rng)
    aniso, aniso_se = _mean_se(cos)
    aniso_draws = aniso + aniso_se * rng.standard_normal(resamples)
    out = {
        "self_similarity": _measure(ss, words, "word"),
        "explainable_variance": _measure(mev, words, "word"),
        "intra_sentence_similarity": _measure(intra, sentences, "sentence"),
        "anisotropy": _monte_carlo(aniso, aniso_se, len(cos), "pair", len(cos)),
    }
    mev_base, base_se = _nanmean(base_w), _stratified_se(base)
    out["mev_baseline"] = _monte_carlo(mev_base, base_se, _count(base_w), "random set", _count(base))
    out["self_similarity_adj"] = _measure(ss, words, "word", aniso, aniso_draws)
    out["intra_sentence_similarity_adj"] = _measure(intra, sentences, "sentence", aniso, aniso_draws)
    out["explainable_variance_adj"] = _measure(mev, words, "word", mev_base, _resampled_means(base_w, words))
    return out


def _baseline_pairs(X: np.ndarray, selection: Selection, count: int, target_se: float) -> np.ndarray:
    """Cosines of the first ``count`` pairs, then of as many more as make their mean's SE < ``target_se``."""
    pairs = selection.pairs(count)
    cos = pair_cosines(X, pairs)
    while len(cos) > 1 and _mean_se(cos)[1] >= target_se and len(pairs) == count < MAX_PAIRS:
        count = min(MAX_PAIRS, int(np.ceil(count * 1.1 * (_mean_se(cos)[1] / target_se) ** 2)))
        more = selection.pairs(count)[len(pairs) :]
        cos, pairs = np.concatenate([cos, pair_cosines(X, more)]), np.concatenate([pairs, more])
    return cos


def _baseline_sets(X: np.ndarray, selection: Selection, target_se: float) -> np.ndarray:
    """(rounds, words) MEVs of random sets, rounds added until the baseline's SE < ``target_se``."""
    rounds = [explainable_variances(X, selection.random_sets(r)) for r in range(MIN_ROUNDS)]
    while _stratified_se(np.array(rounds)) >= target_se and len(rounds) < MAX_ROUNDS:
        need = int(np.ceil(len(rounds) * 1.1 * (_stratified_se(np.array(rounds)) / target_se) ** 2))
        rounds += [
            explainable_variances(X, selection.random_sets(r)) for r in range(len(rounds), min(need, MAX_ROUNDS))
        ]
    return np.array(rounds)


def _weights(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n) bootstrap multiplicities: n units drawn with replacement, ``resamples`` times."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64) if n else np.zeros((resamples, 0))


def _resampled_means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The mean of the non-NaN values in every resample (weights: ``_weights``)."""
    ok = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ np.where(ok, values, 0.0)) / (weights @ ok)


def _measure(values, weights, unit: str, baseline: float = 0.0, baseline_draws=0.0) -> dict:
    """A unit-bootstrap measure: the mean of ``values`` − ``baseline``, its percentile interval."""
    draws = _resampled_means(values, weights) - baseline_draws
    n = _count(values)
    lo, hi = (  # one word: every resample is that word, no interval
        np.nanpercentile(draws, [50 * (1 - LEVEL), 50 * (1 + LEVEL)])
        if n > 1 and np.isfinite(draws).any()
        else (np.nan,) * 2
    )
    return {"value": _nanmean(values) - baseline, "n": n, "lo": float(lo), "hi": float(hi), "unit": unit, "clusters": n}


def _monte_carlo(value: float, se: float, n: int, unit: str, clusters: int) -> dict:
    """A Monte-Carlo baseline: its mean, standard error and normal 95% interval."""
    half = float(norm.ppf(0.5 + LEVEL / 2)) * se
    return {
        "value": value,
        "n": n,
        "lo": value - half,
        "hi": value + half,
        "unit": unit,
        "clusters": clusters,
        "se": se,
    }


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    if len(values) < 2:
        return (float(values.mean()) if len(values) else float("nan")), float("nan")
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def _stratified_se(rounds: np.ndarray) -> float:
    """SE of the mean over words of each word's mean over rounds (rounds: (R, words), R ≥ 2)."""
    counts = np.sum(~np.isnan(rounds), axis=0)
    keep = counts >= 2
    if not keep.any():
        return float("nan")
    var = np.nanvar(rounds[:, keep], axis=0, ddof=1) / counts[keep]
    return float(np.sqrt(var.sum()) / keep.sum())


def _nanmean(values: np.ndarray, axis: int | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: NaN, as meant
        out = np.nanmean(values, axis=axis)
    return out if axis is not None else float(out)


def _count(values: np.ndarray) -> int:
    return int(np.sum(~np.isnan(values)))
