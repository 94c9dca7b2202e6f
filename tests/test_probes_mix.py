"""Scalar-mix λ ablation: conlleval chunk F1, the window index, and what λ does to the weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probes.errors import ProbeInputError
from probes.estimators.mix_tagger import MixProbe, TokenData, chunk_f1, window_index
from probes.registry import RunContext
from probes.tasks.mix import ROWS, run_mix
from tests.probe_helpers import RandomEmbedder


def test_chunk_f1_conlleval_hand_worked():
    gold = [["B-NP", "I-NP", "O", "B-VP", "B-NP"]]
    # conlleval: an I- tag after a chunk of another type starts a new chunk, so I-NP at 4 = NP(4).
    assert chunk_f1(gold, [["B-NP", "I-NP", "O", "B-VP", "I-NP"]]) == pytest.approx(100.0)
    # NP(0) has the wrong span: 2 of 3 predicted and 2 of 3 gold chunks are right -> F1 = 2/3.
    assert chunk_f1(gold, [["B-NP", "O", "O", "B-VP", "B-NP"]]) == pytest.approx(200 / 3)
    # Right span, wrong type is wrong; chunks never cross sentences.
    assert chunk_f1(gold + [["B-PP"]], [["B-NP", "I-NP", "O", "B-NP", "B-NP"], ["B-NP"]]) == pytest.approx(50.0)
    with pytest.raises(ValueError):
        chunk_f1([[]], [[]])


def test_window_index_stays_in_sentence():
    w = window_index(np.array([0, 2, 5]))
    np.testing.assert_array_equal(w, [[-1, 0, 1], [0, 1, -1], [-1, 2, 3], [2, 3, 4], [3, 4, -1]])


def _synthetic(n_sent=300, L=3, d=8, seed=0):
    """Labels readable from layer 1 only; layers 0 and 2 are noise."""
    rng = np.random.default_rng(seed)
    n = n_sent * 5
    y = rng.integers(0, 4, n)
    layers = rng.standard_normal((L, n, d)).astype(np.float32)
    layers[1, :, :4] += 3 * np.eye(4)[y]
    offsets = np.arange(0, n + 1, 5)
    return TokenData(torch.from_numpy(layers).half(), None, offsets, np.array(list("ABCD"))[y])


def test_small_lambda_lets_the_mix_pick_the_informative_layer():
    data = _synthetic()
    free = MixProbe(lam=0.001, epochs=12, lr=5e-2, batch_size=256, device="cpu", patience=12).fit(data)
    tied = MixProbe(lam=1000.0, epochs=12, lr=5e-2, batch_size=256, device="cpu", patience=12).fit(data)
    s_free, s_tied = free.mix_weights()["s"], tied.mix_weights()["s"]
    assert s_free[1] == max(s_free) and s_free[1] > 0.45
    assert max(abs(v - 1 / 3) for v in s_tied) < 0.05
    assert (free.predict(data) == data.labels).mean() > 0.9


def test_run_mix_on_a_real_slice(tmp_path):
    emb = RandomEmbedder(num_layers=2, dim=16, seed=2, version="mix")
    res = run_mix(
        emb, ctx=RunContext(limit=60, device="cpu", show_progress=False, feature_root=tmp_path), rows=ROWS, epochs=2
    )
    vals = {(r["dataset"], r["layer"]): r["value"] for r in res.rows}
    assert set(vals) == {
        (f"conll2000-test:{t}", r) for t in ("pos", "chunk") for r in ("baseline", "last", "all λ=1", "all λ=0.001")
    }
    assert all(0 <= v <= 100 for v in vals.values())
    w = res.extra["mix"]["pos"]["all λ=1"]
    assert len(w["s"]) == 2 and sum(w["s"]) == pytest.approx(1, abs=1e-3) and w["gamma"] > 0


def test_bad_requests(tmp_path):
    with pytest.raises(ProbeInputError, match="single layer"):
        run_mix(RandomEmbedder(num_layers=1), ctx=RunContext(limit=5, feature_root=tmp_path))
    with pytest.raises(ProbeInputError, match="row"):
        run_mix(RandomEmbedder(), ctx=RunContext(limit=5, feature_root=tmp_path), rows=("nope",))
    with pytest.raises(ProbeInputError, match="limit"):
        run_mix(RandomEmbedder(), ctx=RunContext(limit=0, feature_root=tmp_path))
