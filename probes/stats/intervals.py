"""Bootstrap confidence intervals and paired tests for probe scores, vectorised and seeded.

A probe score is a statistic of per-instance outcomes (a token tagged right, a sense found). Its 95%
interval is the percentile bootstrap over test instances (Efron & Tibshirani 1993), 1,000 resamples
by default. Resampling n instances with replacement only changes how many of each *kind* of outcome
there are, so the resampled counts are drawn directly:

- accuracy (one boolean per instance): the resampled number correct is Binomial(n, p̂) — the same
  distribution as resampling the instances, in O(resamples) instead of O(resamples · n);
- a statistic of a few outcome categories (WSD: correct / wrong / unanswered → F1 = 2c / (a + n)):
  Multinomial(n, category shares);
- a statistic of per-group counts (span F1 from each sentence's tp, predicted, gold): resampling
  weights over groups (Multinomial(groups, uniform)), in chunks so memory stays bounded.

Paired comparisons (layer vs layer, model vs model on the same test instances) report the difference
in points, its paired-bootstrap interval (Multinomial over the four agreement cells), and the exact
McNemar p-value — the sign-flip permutation test of paired binary outcomes: only the discordant pairs
carry information, and under the null each is equally likely to favour either side, so the p-value is
the two-sided Binomial(d, ½) tail. A model compared with itself has no discordant pair: p = 1.

Per-instance outcomes of a result are kept, packed eight to a byte, in
``result.extra["instances"]["<dataset>|<layer>"]`` so that comparisons can be made later from
saved results (``keep_instances`` / ``instances``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import numpy as np
from scipy.stats import binomtest

RESAMPLES = 1000
LEVEL = 0.95
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


def accuracy_interval(correct, *, seed: int = 0, resamples: int = RESAMPLES) -> tuple[float, float]:
    """95% bootstrap interval of the accuracy (in percent) of boolean per-instance outcomes."""
    correct = _as_bool(correct)
    n = correct.size
    hits = np.random.default_rng(seed).binomial(n, correct.mean(), size=resamples)
    return _percentiles(100.0 * hits / n)


def accuracy_row(
    dataset: str, layer: str, correct, *, metric: str = "accuracy", seed: int = 0, resamples: int = RESAMPLES
) -> dict:
    """A result row: value = round(100 · mean, 2) as every probe reports it, n, and its interval."""
    correct = _as_bool(correct)
    lo, hi = accuracy_interval(correct, seed=seed, resamples=resamples)
    return {
        "dataset": dataset,
        "layer": layer,
        "metric": metric,
        "value": round(100 * float(correct.mean()), 2),
        "n": int(correct.size),
        "lo": lo,
        "hi": hi,
    }


def categorical_interval(
    counts, statistic: Callable[[np.ndarray], np.ndarray], *, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """Interval of ``statistic(resampled counts (R, k)) -> (R,)`` (percent) for k outcome categories.

    ``counts[j]`` is how many test instances had outcome j; e.g. WSD (correct, wrong, unanswered)
    with ``statistic = lambda c: 100 * 2 * c[:, 0] / (c[:, 0] + c[:, 1] + c.sum(1))``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if counts.ndim != 1 or n == 0:
        raise ValueError("Outcome counts must be a 1-D array with at least one instance.")
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    return _percentiles(np.asarray(statistic(draws), dtype=float))


def grouped_interval(
    stats_per_group, statistic: Callable[[np.ndarray], np.ndarray], *, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """Interval of a statistic of summed per-group counts, resampling groups (e.g. sentences).

    stats_per_group: (groups, k) counts, e.g. each sentence's (tp, n_pred, n_gold).
    statistic:       (R, k) resampled sums -> (R,) values in percent (e.g. span F1).
    """
    stats = np.asarray(stats_per_group, dtype=np.float64)
    if stats.ndim != 2 or stats.shape[0] == 0:
        raise ValueError("Per-group counts must be a (groups, k) array with at least one group.")
    groups = stats.shape[0]
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _GROUP_CHUNK // groups)
    values = []
    for start in range(0, resamples, per_chunk):
        size = min(per_chunk, resamples - start)
        weights = rng.multinomial(groups, np.full(groups, 1.0 / groups), size=size)  # (size, groups)
        values.append(np.asarray(statistic(weights @ stats), dtype=float))
    return _percentiles(np.concatenate(values))


def paired_test(a_correct, b_correct, *, seed: int = 0, resamples: int = RESAMPLES) -> dict:
    """A minus B on the same instances: {"diff", "lo", "hi" (points), "p" (exact McNemar, two-sided)}."""
    a, b = _as_bool(a_correct), _as_bool(b_correct)
    if a.size != b.size:
        raise ValueError(f"Paired outcomes need the same instances ({a.size} vs {b.size}).")
    n = a.size
    cells = np.array([np.sum(a & ~b), np.sum(~a & b), np.sum(a == b)])  # a only, b only, agree
    diff = 100.0 * (cells[0] - cells[1]) / n
    draws = np.random.default_rng(seed).multinomial(n, cells / n, size=resamples)
    lo, hi = _percentiles(100.0 * (draws[:, 0] - draws[:, 1]) / n)
    discordant = int(cells[0] + cells[1])
    p = 1.0 if discordant == 0 else float(binomtest(int(cells[0]), discordant, 0.5).pvalue)
    return {"diff": round(float(diff), 2), "lo": lo, "hi": hi, "p": min(1.0, p), "n": int(n)}


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


def keep_instances(extra: dict, dataset: str, layer: str, correct) -> None:
    """Store one row's per-instance outcomes in a result's ``extra`` (for later paired tests)."""
    correct = _as_bool(correct)
    extra.setdefault("instances", {})[instance_key(dataset, layer)] = {"n": int(correct.size), "bits": pack(correct)}


def instances(result, dataset: str, layer: str) -> np.ndarray | None:
    """The kept per-instance outcomes of ``result`` (a ProbeResult or its ``extra``) for one row, or None."""
    extra = result if isinstance(result, dict) else (result.extra or {})
    entry = (extra.get("instances") or {}).get(instance_key(dataset, str(layer)))
    return None if entry is None else unpack(entry["bits"], int(entry["n"]))
