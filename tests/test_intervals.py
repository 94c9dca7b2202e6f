"""Bootstrap intervals and paired tests (probes/stats/intervals.py): the properties the rigor issue names,
checked against a plain instance-resampling bootstrap and scipy."""

from __future__ import annotations

import numpy as np
import pytest

from probes.results import ProbeResult, results_frame
from probes.stats import intervals


def naive_bootstrap(correct: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, correct.size, size=(resamples, correct.size))
    acc = 100 * correct[idx].mean(axis=1)
    return tuple(np.percentile(acc, [2.5, 97.5]))


def test_perfect_classifier_interval_is_100_100():
    assert intervals.accuracy_interval(np.ones(57, bool)) == (100.0, 100.0)
    row = intervals.accuracy_row("test", "3", np.ones(10, bool))
    assert (row["value"], row["lo"], row["hi"], row["n"]) == (100.0, 100.0, 100.0, 10)


def test_accuracy_interval_matches_resampling_instances():
    rng = np.random.default_rng(1)
    correct = rng.random(2000) < 0.83
    lo, hi = intervals.accuracy_interval(correct, resamples=4000, seed=3)
    nlo, nhi = naive_bootstrap(correct, 4000, seed=7)
    assert lo < 100 * correct.mean() < hi
    assert abs(lo - nlo) < 0.35 and abs(hi - nhi) < 0.35  # same distribution, other draws
    # ~ normal approximation: half-width 1.96·sqrt(p(1-p)/n)
    half = 196 * np.sqrt(correct.mean() * (1 - correct.mean()) / correct.size)
    assert abs((hi - lo) / 2 - half) < 0.3


def test_interval_is_seeded_and_narrows_with_n():
    small = np.r_[np.ones(40, bool), np.zeros(10, bool)]
    big = np.tile(small, 40)
    assert intervals.accuracy_interval(small, seed=5) == intervals.accuracy_interval(small, seed=5)
    w_small = np.subtract(*intervals.accuracy_interval(small)[::-1])
    w_big = np.subtract(*intervals.accuracy_interval(big)[::-1])
    assert w_big < w_small / 4


def test_paired_test_of_a_model_with_itself_gives_p_1():
    correct = np.random.default_rng(0).random(500) < 0.6
    out = intervals.paired_test(correct, correct)
    assert out["p"] == 1.0 and out["diff"] == 0.0 and out["lo"] == out["hi"] == 0.0


def test_paired_test_detects_a_real_difference_and_is_antisymmetric():
    rng = np.random.default_rng(2)
    b = rng.random(3000) < 0.70
    a = b | (rng.random(3000) < 0.10)  # a fixes ~3 points of b's errors, breaks nothing
    ab, ba = intervals.paired_test(a, b), intervals.paired_test(b, a)
    assert ab["p"] < 1e-6 and ab["lo"] > 0
    assert ab["diff"] == -ba["diff"] and ab["p"] == pytest.approx(ba["p"])
    assert ab["diff"] == pytest.approx(100 * (a.mean() - b.mean()), abs=0.01)


def test_paired_p_is_the_exact_mcnemar_tail():
    a = np.array([1] * 8 + [0] * 2 + [1] * 50, bool)  # 8 discordant for a, 2 for b
    b = np.array([0] * 8 + [1] * 2 + [1] * 50, bool)
    # two-sided Binomial(10, 1/2) tail of 8: 2 * P(X >= 8) = 2 * 56 / 1024
    assert intervals.paired_test(a, b)["p"] == pytest.approx(112 / 1024)


def test_categorical_and_grouped_intervals_cover_the_point_estimate():
    counts = np.array([700, 250, 50])  # correct, wrong, unanswered
    f1 = lambda c: 100 * 2 * c[:, 0] / ((c[:, 0] + c[:, 1]) + c.sum(1))
    point = f1(counts[None])[0]
    lo, hi = intervals.categorical_interval(counts, f1)
    assert lo < point < hi and hi - lo < 8
    rng = np.random.default_rng(4)
    gold = rng.integers(1, 5, 300)
    tp = np.minimum(gold, rng.integers(0, 5, 300))
    per_sentence = np.c_[tp, gold, gold]  # tp, predicted, gold
    span_f1 = lambda s: 100 * 2 * s[:, 0] / (s[:, 1] + s[:, 2])
    lo, hi = intervals.grouped_interval(per_sentence, span_f1)
    assert lo < span_f1(per_sentence.sum(0, keepdims=True))[0] < hi


def test_kept_instances_round_trip_through_a_result():
    correct = np.random.default_rng(9).random(1001) < 0.5
    res = ProbeResult("m", "pos", [intervals.accuracy_row("test", "2", correct)])
    intervals.keep_instances(res.extra, "test", "2", correct)
    again = ProbeResult.from_json(res.to_json())
    assert np.array_equal(intervals.instances(again, "test", "2"), correct)
    assert intervals.instances(again, "test", "3") is None
    frame = results_frame([again])
    assert frame.loc[0, "lo"] == res.rows[0]["lo"] and frame.loc[0, "hi"] == res.rows[0]["hi"]


@pytest.mark.parametrize("bad", [[], [[1, 0]]])
def test_bad_outcomes_are_refused(bad):
    with pytest.raises(ValueError):
        intervals.accuracy_interval(bad)
