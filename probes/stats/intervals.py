"""Bootstrap confidence intervals and paired tests for probe scores, vectorised and seeded.

A probe score is a statistic of per-instance outcomes (a token tagged right, a sense found). Its 95%
interval is the percentile bootstrap (Efron & Tibshirani 1993), 1,000 resamples by default, over the
test set's resampling *unit* (``probes.stats.units``): documents for the WSD framework's sets,
sentences for token and span tasks, instances only where they are independent. With clusters, the
per-cluster counts are resampled (``grouped_interval``: the cluster bootstrap, Field & Welsh 2007) and
the paired test flips the sign of whole clusters (``paired_test``). With independent instances,
resampling n instances with replacement only changes how many of each *kind* of outcome there are, so
the resampled counts are drawn directly:

- accuracy (one boolean per instance): the resampled number correct is Binomial(n, p̂) — the same
  distribution as resampling the instances, in O(resamples) instead of O(resamples · n);
- a statistic of a few outcome categories (WSD: correct / wrong / unanswered → F1 = 2c / (a + n)):
  Multinomial(n, category shares);
- a statistic of per-group counts (span F1 from each sentence's tp, predicted, gold): resampling
  weights over groups (Multinomial(groups, uniform)), in chunks so memory stays bounded.

Paired comparisons (layer vs layer, model vs model on the same test instances) report the difference
in points, its paired-bootstrap interval, and a sign-flip permutation p-value. With independent
instances that is the exact McNemar test: only the discordant pairs carry information, and under the
null each is equally likely to favour either side, so p is the two-sided Binomial(d, ½) tail. With
clusters, each cluster's difference (A right − B right) has its sign flipped as a whole
(``_sign_flip_p``: exact up to 13 clusters, else 9,999 random sign patterns)
and the interval resamples clusters. A model compared with itself has no discordant pair: p = 1.

Per-instance outcomes of a result are kept, packed eight to a byte, in
``result.extra["instances"]["<dataset>|<layer>"]`` so that comparisons can be made later from
saved results (``keep_instances`` / ``instances``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import numpy as np
from scipy.stats import binomtest

from probes.stats.units import Units, keep_units

RESAMPLES = 1000
PERMUTATIONS = 9999
# A test whose p comes from bootstrap draws resolves p ≥ 2 / (1 + draws): with 1,000 that floor (0.002) times a
# family of 25 tests is 0.05, so no seed-averaged difference, however large, could survive Holm in such a family.
# As many draws as the sign-flip test has patterns: the floor is 0.0002.
TEST_RESAMPLES = PERMUTATIONS
_SEED_CHUNK = 1000  # draws per chunk of a two-way bootstrap (resamples × clusters int64 ~ 16 MB at 2,012)
EXACT_FLIPS = 13  # up to 2**13 = 8,192 sign patterns: enumerate them all
LEVEL = 0.95  # every interval the lab reports (bootstrap, t, normal, CKA's) is at this one level
_GROUP_CHUNK = 4_000_000  # resample weights per chunk (resamples × groups) ~ 32 MB of int64


def _percentiles(samples: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return round(float(lo), 2), round(float(hi), 2)


def _as_bool(correct) -> np.ndarray:
    arr = np.asarray(correct)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("Per-instance outcomes must be a non-empty 1-D array.")
    return arr.astype(bool)


def accuracy_interval(
    correct, *, units: Units | None = None, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float] | tuple[None, None]:
    """95% bootstrap interval of the accuracy (in percent) of boolean per-instance outcomes, resampling
    ``units`` (default: independent instances); none (None, None) from one unit, which resampling cannot vary."""
    correct = _as_bool(correct)
    n = correct.size
    if units is None or units.is_instance:
        if n < 2:  # as grouped_interval's single group: a zero-width "interval" would claim certainty
            return None, None
        hits = np.random.default_rng(seed).binomial(n, correct.mean(), size=resamples)
        return _percentiles(100.0 * hits / n)
    per_cluster = units.sums(np.c_[correct, np.ones(n)])
    return grouped_interval(
        per_cluster, lambda s: 100.0 * s[:, 0] / np.maximum(s[:, 1], 1), seed=seed, resamples=resamples
    )


def accuracy_row(
    dataset: str,
    layer: str,
    correct,
    *,
    units: Units | None = None,
    metric: str = "accuracy",
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> dict:
    """A result row: value = round(100 · mean, 2) as every probe reports it, n, its interval and unit."""
    correct = _as_bool(correct)
    units = units or Units.instances(correct.size)
    lo, hi = accuracy_interval(correct, units=units, seed=seed, resamples=resamples)
    return {
        "dataset": dataset,
        "layer": layer,
        "metric": metric,
        "value": round(100 * float(correct.mean()), 2),
        "n": int(correct.size),
        "lo": lo,
        "hi": hi,
        **units.row_fields(),
    }


def categorical_interval(
    counts, statistic: Callable[[np.ndarray], np.ndarray], *, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float] | tuple[None, None]:
    """Interval of ``statistic(resampled counts (R, k)) -> (R,)`` (percent) for k outcome categories.

    ``counts[j]`` is how many test instances had outcome j; e.g. WSD (correct, wrong, unanswered)
    with ``statistic = lambda c: 100 * 2 * c[:, 0] / (c[:, 0] + c[:, 1] + c.sum(1))``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if counts.ndim != 1 or n == 0:
        raise ValueError("Outcome counts must be a 1-D array with at least one instance.")
    if n < 2:  # one instance: no interval (``accuracy_interval``)
        return None, None
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    return _percentiles(np.asarray(statistic(draws), dtype=float))


def grouped_interval(
    stats_per_group, statistic: Callable[[np.ndarray], np.ndarray], *, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float] | tuple[None, None]:
    """Interval of a statistic of summed per-group counts, resampling groups (e.g. sentences); none (None, None)
    from a single group, which resampling cannot vary (a test set of one document).

    stats_per_group: (groups, k) counts, e.g. each sentence's (tp, n_pred, n_gold).
    statistic:       (R, k) resampled sums -> (R,) values in percent (e.g. span F1); NaN where a resample leaves
                     it undefined (no edge to score), and such resamples are left out.

    For an equal-weight mean over strata, some of them small, use ``probes.stats.strata.strata_mean_interval``.
    """
    stats = np.asarray(stats_per_group, dtype=np.float64)
    if stats.ndim != 2 or stats.shape[0] == 0:
        raise ValueError("Per-group counts must be a (groups, k) array with at least one group.")
    groups = stats.shape[0]
    if groups < 2:  # every resample is the one group: a zero-width "interval" that claims certainty
        return None, None
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _GROUP_CHUNK // groups)
    values = []
    for start in range(0, resamples, per_chunk):
        size = min(per_chunk, resamples - start)
        values.append(np.asarray(statistic(_resample_weights(rng, groups, size) @ stats), dtype=float))
    samples = np.concatenate(values)
    defined = samples[np.isfinite(samples)]  # a resample the statistic is undefined on (no edge drawn) is left out
    if defined.size == 0:
        raise ValueError("The statistic is undefined on every resample: nothing to score.")
    return _percentiles(defined)


def _resample_weights(rng: np.random.Generator, groups: int, size: int) -> np.ndarray:
    """(size, groups) counts of each group in ``size`` bootstrap samples of ``groups`` draws with replacement
    (Multinomial(groups, uniform) per row, from one bincount: 4× faster than ``Generator.multinomial``)."""
    draws = rng.integers(0, groups, size=(size, groups)) + groups * np.arange(size)[:, None]
    return np.bincount(draws.ravel(), minlength=size * groups).reshape(size, groups)


def _right_by_seed(by_seed: np.ndarray, units: Units) -> np.ndarray:
    """(seeds, n) outcomes -> (seeds, clusters) instances right per cluster."""
    return np.stack([units.sums(o)[:, 0] for o in by_seed])


def _seed_cluster_draws(right: np.ndarray, cluster_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(R,) instances right in each two-way bootstrap draw: the seeds resampled (and averaged), the clusters
    weighted by ``cluster_weights`` (R, clusters) — seed and sample variance together. Summed in integer counts
    (exact in float64, in any order; one division at the end), so two sides that are right on as many instances
    in a draw differ by exactly 0 — a tie, as the test's p counts it — and a matrix product does the work."""
    seed_counts = _resample_weights(rng, len(right), len(cluster_weights)).astype(np.float64)
    weights = np.asarray(cluster_weights, dtype=np.float64)  # einsum mixing int64 and float64 is 3× slower
    return np.einsum("rs,rk,sk->r", seed_counts, weights, right) / len(right)


def seed_cluster_interval(
    correct_by_seed, units: Units, *, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float] | tuple[None, None]:
    """Interval of the seed-averaged accuracy of (seeds, n) outcomes: each draw resamples the seeds and the
    clusters of ``units`` with replacement, independently (a two-way bootstrap: seed and sample variance)."""
    outs = np.asarray(correct_by_seed, dtype=bool)
    sizes = units.sums(np.ones(outs.shape[1]))[:, 0]
    if sizes.size < 2:  # one cluster: the seeds alone would make a sample-variance-free "interval"
        return None, None
    rng = np.random.default_rng(seed)
    wk = _resample_weights(rng, sizes.size, resamples)  # (R, clusters)
    return _percentiles(100.0 * _seed_cluster_draws(_right_by_seed(outs, units), wk, rng) / np.maximum(wk @ sizes, 1))


def paired_seed_test(a_by_seed, b_by_seed, units: Units, *, seed: int = 0, resamples: int = TEST_RESAMPLES) -> dict:
    """A minus B, each the mean over its own seeds' probes, on the same instances: the interval resamples A's
    seeds, B's seeds and the shared clusters (two-way bootstrap: seed and sample variance). p is the larger of
    the cluster sign-flip p of the seed-averaged outcomes (sample variance, the seeds held fixed) and the
    bootstrap's two-sided p, 2·(1 + draws on the far side of 0)/(1 + resamples) (seed variance too), so a
    verdict never contradicts the interval; ``TEST_RESAMPLES`` draws by default, so that p can go as low as
    the sign flip's. Keys as ``paired_test``'s, plus "seeds"."""
    a, b = np.asarray(a_by_seed, dtype=bool), np.asarray(b_by_seed, dtype=bool)
    if a.shape[1] != b.shape[1] or len(units) != a.shape[1]:
        raise ValueError("Paired seed outcomes need the same instances and their units.")
    n = a.shape[1]
    right_a, right_b = _right_by_seed(a, units), _right_by_seed(b, units)
    sizes = units.sums(np.ones(n))[:, 0]
    rng = np.random.default_rng(seed)
    diffs, points = [], []
    for start in range(0, resamples, _SEED_CHUNK):  # in chunks: memory stays bounded
        wk = _resample_weights(rng, sizes.size, min(_SEED_CHUNK, resamples - start)).astype(np.float64)  # shared
        diffs.append(_seed_cluster_draws(right_a, wk, rng) - _seed_cluster_draws(right_b, wk, rng))
        points.append(100.0 * diffs[-1] / np.maximum(wk @ sizes, 1))
    diff_draws = np.concatenate(diffs)
    lo, hi = _percentiles(np.concatenate(points)) if sizes.size > 1 else (None, None)
    far_side = min(int(np.sum(diff_draws <= 0)), int(np.sum(diff_draws >= 0)))
    p_boot = 2.0 * (1 + far_side) / (1 + resamples)
    p_flip = _sign_flip_p(right_a.mean(0) - right_b.mean(0), seed)  # sign flip: seed-averaged per cluster
    p = max(p_flip, p_boot)
    # Monte Carlo error of the larger of two estimates, either of which other draws could make the larger: the
    # larger of their errors (p_boot = 2q, q a proportion of ``resamples`` draws; an enumerated flip has none)
    half = p_boot / 2
    p_se = max(2 * float(np.sqrt(half * (1 - half) / resamples)), sign_flip_se(p_flip, sizes.size))
    seeds = f"{len(a)}+{len(b)}" if len(a) != len(b) else str(len(a))
    return {**_test_row(100.0 * float(a.mean() - b.mean()), lo, hi, p, p_se, units), "seeds": seeds}


def _test_row(diff: float, lo: float, hi: float, p: float, p_se: float, units: Units) -> dict:
    """A paired test's keys: the difference in points, its interval, p and p's Monte Carlo error, the units."""
    return {
        "diff": round(diff, 2),
        "lo": lo,
        "hi": hi,
        "p": min(1.0, p),
        "p_se": p_se,
        "n": len(units),
        **units.row_fields(),
    }


def paired_test(a_correct, b_correct, *, units: Units | None = None, seed: int = 0, resamples: int = RESAMPLES) -> dict:
    """A minus B on the same instances: {"diff", "lo", "hi" (points), "p" (two-sided), "p_se" (its Monte Carlo
    standard error; 0: exact), "n", "unit", "clusters"}.

    Independent instances: paired bootstrap over the four agreement cells and the exact McNemar p.
    Clusters: cluster bootstrap of the difference and the cluster sign-flip permutation p."""
    a, b = _as_bool(a_correct), _as_bool(b_correct)
    if a.size != b.size:
        raise ValueError(f"Paired outcomes need the same instances ({a.size} vs {b.size}).")
    n = a.size
    units = units or Units.instances(n)
    if len(units) != n:
        raise ValueError(f"The units cover {len(units)} instances, the outcomes {n}.")
    rng = np.random.default_rng(seed)
    if units.is_instance:
        cells = np.array([np.sum(a & ~b), np.sum(~a & b), np.sum(a == b)])  # a only, b only, agree
        draws = rng.multinomial(n, cells / n, size=resamples)
        lo, hi = _percentiles(100.0 * (draws[:, 0] - draws[:, 1]) / n) if n > 1 else (None, None)
        discordant = int(cells[0] + cells[1])
        p = 1.0 if discordant == 0 else float(binomtest(int(cells[0]), discordant, 0.5).pvalue)
        p_se = 0.0  # exact
    else:
        per_cluster = units.sums(np.c_[a & ~b, ~a & b, np.ones(n)])  # (clusters, 3)
        lo, hi = grouped_interval(
            per_cluster, lambda s: 100.0 * (s[:, 0] - s[:, 1]) / np.maximum(s[:, 2], 1), seed=seed, resamples=resamples
        )
        p = _sign_flip_p(per_cluster[:, 0] - per_cluster[:, 1], seed)
        p_se = sign_flip_se(p, len(per_cluster))
    return _test_row(100.0 * (float(np.sum(a & ~b)) - float(np.sum(~a & b))) / n, lo, hi, p, p_se, units)


def sign_flip_se(p: float, clusters: int) -> float:
    """Monte Carlo standard error of a sign-flip p: 0 where every pattern is enumerated (≤ ``EXACT_FLIPS``
    clusters), else that of a proportion estimated from ``PERMUTATIONS`` random patterns."""
    return 0.0 if clusters <= EXACT_FLIPS else float(np.sqrt(p * (1 - p) / PERMUTATIONS))


def smallest_sign_flip_p(clusters: int) -> float:
    """The smallest p ``_sign_flip_p`` can give with this many clusters: 2/2^k when every sign pattern is
    enumerated (3 documents: 0.25, so no difference on them can be significant), else 1/(1 + PERMUTATIONS)."""
    return 2.0 / 2**clusters if clusters <= EXACT_FLIPS else 1.0 / (1 + PERMUTATIONS)


def _sign_flip_p(differences: np.ndarray, seed: int) -> float:
    """Two-sided p of Σ d_k under sign flips of the per-cluster differences d_k (paired permutation test).

    Exact (every sign pattern) up to ``EXACT_FLIPS`` clusters; else ``PERMUTATIONS`` random patterns and
    p = (1 + #{|Σ ±d_k| ≥ |Σ d_k|}) / (1 + PERMUTATIONS) (Phipson & Smyth 2010). The same test as
    ``scipy.stats.permutation_test`` on paired samples, written as one matrix product per chunk because
    scipy's generic loop took 5 s for 2,012 sentences (a third of a probe's time)."""
    d = np.asarray(differences, dtype=np.float64)
    if not d.any():
        return 1.0
    observed = abs(d.sum()) - 1e-9 * max(1.0, abs(d).sum())  # ties count as extreme
    if d.size <= EXACT_FLIPS:
        signs = 1 - 2 * ((np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1)
        return float(np.mean(np.abs(signs @ d) >= observed))
    rng = np.random.default_rng(seed)
    extreme, per_chunk = 0, max(1, _GROUP_CHUNK // d.size)
    for start in range(0, PERMUTATIONS, per_chunk):
        signs = rng.random((min(per_chunk, PERMUTATIONS - start), d.size), dtype=np.float32) < 0.5
        extreme += int(np.sum(np.abs(2.0 * (signs @ d) - d.sum()) >= observed))
    return (1 + extreme) / (1 + PERMUTATIONS)


def pack(correct) -> str:
    """Boolean outcomes as text (bits packed eight to a byte, base64) for a result's ``extra``."""
    return base64.b64encode(np.packbits(_as_bool(correct)).tobytes()).decode("ascii")


def unpack(text: str, n: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(base64.b64decode(text), dtype=np.uint8))
    if bits.size < n:
        raise ValueError(f"Packed outcomes hold {bits.size} bits, fewer than the {n} instances.")
    return bits[:n].astype(bool)


def instance_key(dataset: str, layer: str) -> str:
    return f"{dataset}|{layer}"


def keep_instances(extra: dict, dataset: str, layer: str, correct, units: Units | None = None) -> None:
    """Store one row's per-instance outcomes in a result's ``extra`` (for later paired tests), and the test
    set's resampling units when they are not independent instances."""
    correct = _as_bool(correct)
    extra.setdefault("instances", {})[instance_key(dataset, layer)] = {"n": int(correct.size), "bits": pack(correct)}
    if units is not None and not units.is_instance:
        keep_units(extra, dataset, units)


def seed_outcomes(result, dataset: str, layer: str) -> np.ndarray | None:
    """(seeds, n) outcomes of one row of a multi-seed result (``extra["seed_instances"]``: every seed's kept
    outcomes), or None when the result kept one seed's."""
    extra = result if isinstance(result, dict) else (result.extra or {})
    # each seed's entry is that seed's ``extra["instances"]`` (``probes.stats.seeds.merge_seeds``)
    per_seed = [_kept(kept, dataset, layer) for kept in (extra.get("seed_instances") or {}).values()]
    if len(per_seed) < 2 or any(o is None for o in per_seed) or len({o.size for o in per_seed}) != 1:
        return None
    return np.stack(per_seed)


def instances(result, dataset: str, layer: str) -> np.ndarray | None:
    """The kept per-instance outcomes of ``result`` (a ProbeResult or its ``extra``) for one row, or None."""
    extra = result if isinstance(result, dict) else (result.extra or {})
    return _kept(extra.get("instances") or {}, dataset, layer)


def has_instances(result, dataset: str, layer: str) -> bool:
    """Whether ``result`` kept one row's per-instance outcomes (what ``instances`` reads), without unpacking them."""
    extra = result if isinstance(result, dict) else (result.extra or {})
    return instance_key(dataset, str(layer)) in (extra.get("instances") or {})


def _kept(kept: dict, dataset: str, layer: str) -> np.ndarray | None:
    """One row's outcomes from a ``{instance_key: {"n", "bits"}}`` dict (``extra["instances"]``, or one seed's)."""
    entry = kept.get(instance_key(dataset, str(layer)))
    return None if entry is None else unpack(entry["bits"], int(entry["n"]))
