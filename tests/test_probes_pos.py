"""Linear POS probe and the majority-tag baseline on real CoNLL-2000 slices."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from probes.errors import ProbeInputError
from probes.estimators.classifier import LinearProbe
from probes.estimators.majority import MajorityLabelBaseline
from probes.registry import RunContext
from probes.tasks.conll import conll_slice
from probes.tasks.pos import run_pos, run_pos_baseline
from tests.probe_helpers import RandomEmbedder


def test_majority_baseline_hand_worked():
    base = MajorityLabelBaseline().fit(["the", "run", "run", "run", "dog", "dog"], ["DT", "VB", "NN", "NN", "NN", "NN"])
    # "run": NN twice vs VB once; unseen words get the overall most frequent tag (NN, 4 of 6).
    assert list(base.predict(["run", "the", "unseen"])) == ["NN", "DT", "NN"]
    assert base.score(["run", "the"], ["VB", "DT"]) == 0.5
    with pytest.raises(ValueError):
        base.score([], [])


def test_linear_probe_learns_separable_data_and_is_deterministic():
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((5, 20)) * 3
    y = rng.integers(0, 5, 3000)
    X = centers[y] + rng.standard_normal((3000, 20))
    labels = np.array(list("ABCDE"))[y]
    a = LinearProbe(seed=1, device="cpu").fit(X[:2000], labels[:2000])
    b = LinearProbe(seed=1, device="cpu").fit(X[:2000], labels[:2000])
    assert a.score(X[2000:], labels[2000:]) > 0.95
    np.testing.assert_array_equal(a.predict(X[2000:]), b.predict(X[2000:]))
    with pytest.raises(ValueError):
        LinearProbe().fit(np.zeros((0, 3)), [])


def test_random_vectors_score_near_the_majority_class(tmp_path):
    noise = RandomEmbedder(num_layers=1, dim=32, noise=1.0, seed=5, version="noise")
    noise._word_vec = lambda w: np.zeros((1, 32), np.float32)
    res = run_pos(noise, "0", RunContext(limit=400, device="cpu", show_progress=False, feature_root=tmp_path))
    acc = res.rows[0]["value"]
    test = conll_slice("test", 400)
    share = 100 * Counter(t for s in test for t in s.pos).most_common(1)[0][1] / sum(len(s.pos) for s in test)
    # No information: at most the majority-class share (the probe learns the prior), a little below
    # it when it fits noise; never the ~90% a word-identity feature gives.
    assert share - 6.0 < acc < share + 2.0, (acc, share)


def test_word_identity_vectors_beat_random_and_baseline_is_sane(tmp_path):
    # Fixed random vectors per word type (no context): a linear probe can learn word -> tag.
    typed = RandomEmbedder(num_layers=2, dim=64, seed=7, version="typed")
    res = run_pos(typed, "1", RunContext(limit=400, device="cpu", show_progress=False, feature_root=tmp_path))
    base = run_pos_baseline(limit=400).rows[0]["value"]
    assert res.rows[0]["value"] > 50
    assert 60 < base < 100


def test_bad_requests(tmp_path):
    with pytest.raises(ProbeInputError, match="limit"):
        run_pos(RandomEmbedder(), "0", RunContext(limit=0, feature_root=tmp_path))
    with pytest.raises(ProbeInputError, match="out of range"):
        run_pos(RandomEmbedder(num_layers=2), "2", RunContext(limit=5, feature_root=tmp_path))
