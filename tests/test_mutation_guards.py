"""Checks written against the hand mutations no test caught (docs/reliability.md, round ten): each pins one
formula or rule to a value worked out here by hand or to a function tested on its own elsewhere (the two-way
bootstrap of the seed merge), never to the formula under test.

A mutation audit changed one line at a time in the statistics, the estimators, the scalar mix and the URL state;
29 of 67 changes left every test passing. These tests fail on the mutated lines named in each docstring.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from models.scalar_mix import ScalarMix
from probes.estimators.mdl import shorter_in_all_orders
from probes.layers import LayerSpec
from probes.results import ProbeResult
from probes.stats.claims import _interval_verdict
from probes.stats.intervals import _sign_flip_p, keep_instances, seed_cluster_interval
from probes.stats.seeds import merge_seeds
from probes.stats.units import Units
from probes.tasks.wsd.rows import split_rows


def test_the_exact_sign_flip_p_is_two_sided():
    """Per-cluster differences 3, 1, 1, 1: of the 16 sign patterns, the two all-same ones reach |Σ| = 6, so p = 2/16
    (the mutation without ``abs`` counted one pattern: a one-sided p, half the truth)."""
    for d in ([3.0, 1, 1, 1], [-3.0, -1, -1, -1]):
        by_hand = np.mean([abs(np.dot(s, d)) >= abs(sum(d)) for s in itertools.product((1, -1), repeat=4)])
        assert by_hand == 2 / 16
        assert _sign_flip_p(np.array(d), seed=0) == pytest.approx(by_hand)


def _seed_run(seed: int, correct: np.ndarray, units: Units, f1: tuple[float, float]) -> ProbeResult:
    extra: dict = {}
    keep_instances(extra, "d", "0", correct, units)
    rows = [
        {"dataset": "d", "layer": "0", "metric": "accuracy", "value": 100 * correct.mean(), "n": correct.size}
        | {"lo": 0.0, "hi": 100.0, **units.row_fields()},
        {"dataset": "d", "layer": "0", "metric": "F1", "value": sum(f1) / 2, "lo": f1[0], "hi": f1[1]},
    ]
    return ProbeResult("m", "toy", rows, params={"seed": seed}, extra=extra)


def test_merged_seeds_resample_seeds_and_sentences_and_other_metrics_take_the_widest_envelope():
    """Three seeds whose outcomes agree within each of 20 sentences: the merged accuracy interval is the seed ×
    sentence bootstrap (not the instances', ~2× narrower, which a mutation put under the "sentence" label, nor the
    seeds' envelope); a metric without kept outcomes takes the lowest lower and highest upper bound, [1, 5]."""
    rng = np.random.default_rng(0)
    units = Units.from_sizes("sentence", [10] * 20)
    sentence_right = rng.random((3, 20)) < 0.6
    runs = [
        _seed_run(k, np.repeat(sentence_right[k], 10), units, f1)
        for k, f1 in zip(range(3), [(1.0, 3.0), (2.0, 5.0), (1.5, 4.0)])
    ]
    merged = {r["metric"]: r for r in merge_seeds(runs).rows}
    outs = np.stack([np.repeat(s, 10) for s in sentence_right])
    assert (merged["accuracy"]["lo"], merged["accuracy"]["hi"]) == seed_cluster_interval(outs, units, seed=0)
    by_instance = seed_cluster_interval(outs, Units.instances(200), seed=0)
    assert merged["accuracy"]["hi"] - merged["accuracy"]["lo"] > 1.5 * (by_instance[1] - by_instance[0])
    assert (merged["F1"]["lo"], merged["F1"]["hi"]) == (1.0, 5.0)


def test_a_selectivity_verdict_needs_disjoint_intervals_not_a_value_past_the_other():
    """A 33 [30.5, 35] against B 31 [29, 31.5]: A's value is above B's interval, but the intervals overlap, so the
    verdict is undecided (a mutation decided it on A's value)."""
    a = {"value": 33.0, "lo": 30.5, "hi": 35.0, "unit": "sentence", "clusters": 100}
    b = {"value": 31.0, "lo": 29.0, "hi": 31.5, "unit": "sentence", "clusters": 100}
    assert _interval_verdict(a, b, lower=False)[2] == "undecided: intervals overlap"
    assert _interval_verdict({**a, "lo": 31.6}, b, lower=False)[2] == "holds: intervals disjoint (no test)"


def test_a_wsd_f1_interval_counts_unanswered_instances_in_f1s_own_formula():
    """100 correct, 50 wrong, 50 unanswered: F1 = 2·100 / (2·100 + 2·50 + 50) = 57.14, and its interval lies around
    it, not around recall's 50 (a mutation gave F1 the accuracy interval) nor 66.7 (the denominator 2c + w + u)."""
    golds = [["k"]] * 200
    preds = ["k"] * 100 + ["x"] * 50 + [None] * 50
    rows = {r["metric"]: r for r in split_rows("d", "0", preds, golds, seed=0)}
    assert rows["F1"]["value"] == pytest.approx(100 * 20 / 35, abs=0.01)
    assert rows["F1"]["lo"] <= rows["F1"]["value"] <= rows["F1"]["hi"]
    assert rows["R"]["lo"] <= 50.0 <= rows["R"]["hi"] and rows["F1"]["lo"] != rows["R"]["lo"]


def test_a_layer_named_by_the_models_own_number_maps_to_its_position():
    """A model that keeps layers 0, 6 and 12: "6" is its second output (index 1), not index 6."""
    assert LayerSpec.parse("6", 3, layer_ids=(0, 6, 12)).index == 1


def test_the_mix_penalty_is_the_sum_of_squares_around_the_uniform_mix():
    """s = (1, 0, 0): ‖s − 1/3‖² = (2/3)² + 2·(1/3)² = 2/3 (a mutation took the mean, λ scaled by 1/L)."""
    mix = ScalarMix(3)
    with torch.no_grad():
        mix.scalar_parameters.copy_(torch.tensor([1e4, 0.0, 0.0]))  # softmax: (1, 0, 0)
    assert float(mix.weight_penalty().detach()) == pytest.approx(2 / 3, abs=1e-5)


def test_a_tie_in_one_order_is_not_shorter_in_all():
    assert not shorter_in_all_orders([5.0, 5.0], [5.0, 6.0])
    assert shorter_in_all_orders([4.0, 5.0], [5.0, 6.0])


def test_a_link_between_a_sliders_steps_opens_the_nearest_step_and_inf_is_no_number():
    """?cap=125 on steps of 10 from 20 opens 130 (half up, as the slider shows it; a mutation floored to 120);
    ?x=inf is not a number a slider can hold: the default."""
    from app_pages.state import _in_range, decode

    assert _in_range(125, 20, 200, 10) == 130 and _in_range(124, 20, 200, 10) == 120
    with pytest.raises(ValueError):
        decode("inf", 1.0)


def test_the_feature_path_refuses_a_model_that_returns_a_word_too_few():
    """A family whose ``_embed_batch`` drops a word: the cache would store rows shifted against their words (a
    mutation skipping ``embed_rows``'s shape check passed every test)."""
    from tests.probe_helpers import RandomEmbedder

    class Short(RandomEmbedder):
        def _embed_batch(self, sentences, with_attention):
            outs = super()._embed_batch(sentences, with_attention)
            for out in outs:
                out.vectors = out.vectors[:, :-1]
            return outs

    with pytest.raises(ValueError, match=r"returned vectors of shape \(3, 2, 16\) for a sentence of 3 words"):
        list(Short().embed_rows([([["a", "b", "c"]], None)], torch.float32))


def test_each_mdl_block_is_coded_by_a_probe_trained_on_the_blocks_before_it_only():
    """Online coding sends block i+1 with a probe fit on blocks 0..i: a mutation that fit it on the block it then
    coded (a leak: codelengths too short) passed every test. A recording probe (each vector's first value is its
    token's id) sees what each fit and each code used; with a uniform prediction the total is N·log2 K exactly."""
    fits, coded = [], []

    class Recorder:
        def __init__(self, classes, batch_size):
            self.classes_ = classes

        def fit(self, X, y, progress=None):
            fits.append(set(X[:, 0].astype(int)))
            return self

        def predict_log_proba(self, X):
            coded.append(set(X[:, 0].astype(int)))
            return np.full((len(X), len(self.classes_)), -np.log(len(self.classes_)))

    from probes.estimators.mdl import online_codelength

    lengths = np.random.default_rng(0).integers(1, 6, size=200)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    X = np.c_[np.arange(n), np.zeros(n)].astype(np.float64)
    y = np.arange(n) % 3
    code = online_codelength(Recorder, X, y, offsets, seed=1)
    assert code.bits == pytest.approx(n * np.log2(3), rel=1e-9)
    assert coded and len(fits) == len(coded)
    sent = set(range(n)) - set().union(*coded)  # the first block, sent with the uniform code
    for seen, block in zip(fits, coded):
        assert not seen & block and seen == sent  # trained on everything sent before, nothing of the block
        sent |= block
    assert sent == set(range(n))


def test_selectivity_intervals_resample_sentences_and_every_control_draw():
    """Outcomes that agree within each of 40 sentences: one control draw's selectivity interval resamples the
    sentences (about 3× the instances' width here; a mutation made it by instance under the "sentence" label); with
    three control draws at ~30, ~60 and ~90 % the control row's interval spans the draws, not draw 0's alone."""
    from probes.estimators.control import selectivity_rows

    rng = np.random.default_rng(0)
    units = Units.from_sizes("sentence", [10] * 40)
    task = np.repeat(rng.random(40) < 0.8, 10)
    draws = np.stack([np.repeat(rng.random(40) < p, 10) for p in (0.3, 0.6, 0.9)])
    one = {r["metric"]: r for r in selectivity_rows("d", "0", task, draws[:1], units=units)}
    flat = {r["metric"]: r for r in selectivity_rows("d", "0", task, draws[:1])}
    sel, by_instance = one["selectivity"], flat["selectivity"]
    assert sel["unit"] == "sentence" and sel["clusters"] == 40
    assert sel["hi"] - sel["lo"] > 2 * (by_instance["hi"] - by_instance["lo"])
    three = {r["metric"]: r for r in selectivity_rows("d", "0", task, draws, units=units)}["control_accuracy"]
    assert three["lo"] < 45 and three["hi"] > 75, (three["lo"], three["hi"])


def test_a_newer_one_seed_run_replaces_an_older_runs_seeds_in_the_tests():
    """An old three-seed result, then a newer single-seed run of the same layer: the paired tests must read the new
    run's outcomes with one seed, not the old run's seeds (a mutation kept them: tests on stale outcomes)."""
    from probes.stats.comparisons import outcome_table

    units = Units.from_sizes("sentence", [5] * 20)
    rng = np.random.default_rng(1)
    old = merge_seeds([_seed_run(k, rng.random(100) < 0.5, units, (1.0, 2.0)) for k in range(3)])
    newer = _seed_run(7, rng.random(100) < 0.9, units, (1.0, 2.0))
    assert ("m", "0") in outcome_table([old], "toy", "d").by_seed
    table = outcome_table([old, newer], "toy", "d")
    assert ("m", "0") not in table.by_seed
    assert np.array_equal(table[("m", "0")], _kept(newer))


def _kept(result: ProbeResult) -> np.ndarray:
    from probes.stats.intervals import instances

    return instances(result, "d", "0")


def holm_by_hand(p) -> list[float]:
    """Holm's step-down adjustment written out from its definition (the tests compare the product's against it,
    not against itself): the k-th smallest p times (m − k + 1), then the running maximum, capped at 1."""
    p = [float(x) for x in p]
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - k) * p[i]))
        out[i] = running
    return out


def test_holm_adjusts_worked_values():
    """p = .01, .04, .03, .005: sorted .005 ×4 = .02, .01 ×3 = .03, .03 ×2 = .06, .04 ×1 = .04 → max so far .06;
    Holm swapped for Hochberg (step-up) was caught only by a committed table's byte-identical rerender."""
    from probes.stats.comparisons import holm

    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_by_hand([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_every_interval_is_at_the_95_percent_level():
    """The level the tables name, checked per kind of interval at values worked out by hand (a mutation of the one
    ``LEVEL`` was caught only by a committed table's rerender): the percentile bootstrap's ends are the 2.5th and
    97.5th percentiles (0, 1, …, 1000 → 25 and 975); MDL's t-interval over the orders 1, 2, 3 is 2 ± t(.975, 2) ·
    1 / √3 = 2 ± 4.303 / 1.732; a Monte-Carlo baseline's normal interval is ± 1.960 SE."""
    from probes.estimators.contextuality import _monte_carlo
    from probes.estimators.mdl import order_interval
    from probes.stats.intervals import _percentiles

    assert _percentiles(np.arange(1001.0)) == (25.0, 975.0)
    assert order_interval([1.0, 2.0, 3.0]) == pytest.approx((2 - 4.3027 / 3**0.5, 2 + 4.3027 / 3**0.5), abs=1e-3)
    row = _monte_carlo(0.5, 0.01, 100, "pair", 100)
    assert (row["lo"], row["hi"]) == pytest.approx((0.5 - 0.0196, 0.5 + 0.0196), abs=1e-5)


def test_the_layer_norm_of_a_mix_uses_only_the_positions_the_mask_keeps():
    """AllenNLP's masked layer norm: each layer is centred and scaled by the mean and variance of its kept positions
    only, so what padding holds changes nothing, and the kept values come out with mean 0 and variance 1."""
    torch.manual_seed(0)
    layers = torch.randn(2, 3, 4, 5) * 3 + 1  # (layers, batch, time, dim)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    mix = ScalarMix(2, do_layer_norm=True, initial_weights=[1e4, 0.0])  # s = (1, 0): layer 0 alone
    out = mix(layers, mask)
    kept = layers[0][mask]  # (kept positions, dim)
    by_hand = (kept - kept.mean()) / kept.std(unbiased=False)
    assert torch.allclose(out[mask], by_hand, atol=1e-5)
    noisy = layers.clone()
    noisy[:, ~mask] = 1e3
    assert torch.allclose(mix(noisy, mask)[mask], out[mask], atol=1e-5)
