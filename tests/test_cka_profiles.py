"""Linear CKA (probes/estimators/cka.py) and layer profiles (probes/stats/profiles.py): defining properties, real models and
the committed results."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group

from corpora.paths import REPO_ROOT
from models.registry import load_embedder
from probes.estimators.cka import cka_matrix, layer_cka, linear_cka
from probes.stats.profiles import (centre_of_gravity, centres_of_gravity, expected_layer, expected_layers, layer_profile,
                             relative_depth)
from probes.results import load_extras, load_results

RUNS = REPO_ROOT / "docs" / "results" / "runs"


def test_cka_of_a_layer_with_itself_is_one_and_invariant_to_rotation_and_scaling():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 16)) @ rng.normal(size=(16, 16))
    Y = np.tanh(X[:, :10]) + 0.5 * rng.normal(size=(200, 10))
    Q = ortho_group.rvs(16, random_state=1)
    assert linear_cka(X, X) == pytest.approx(1.0)
    assert linear_cka(X @ Q, X) == pytest.approx(1.0)
    assert linear_cka(3.7 * X @ Q, Y) == pytest.approx(linear_cka(X, Y))
    assert linear_cka(X + 5.0, Y) == pytest.approx(linear_cka(X, Y))      # centred: a shift changes nothing
    assert 0 < linear_cka(X, Y) < 1
    # not invariant to any invertible linear map (the paper's point): a strong anisotropic stretch moves it
    stretch = np.diag(np.r_[100.0, np.ones(15)])
    assert linear_cka(X @ stretch, Y) != pytest.approx(linear_cka(X, Y), abs=1e-3)
    assert linear_cka(X, rng.normal(size=(200, 16))) < 0.2


def test_cka_matrix_is_symmetric_with_unit_diagonal_and_refuses_mismatched_rows():
    rng = np.random.default_rng(2)
    layers = [rng.normal(size=(50, 8)) for _ in range(3)]
    M = cka_matrix(layers)
    np.testing.assert_allclose(np.diag(M), 1.0)
    np.testing.assert_allclose(M, M.T)
    np.testing.assert_allclose(cka_matrix(layers, layers[:2]), M[:, :2])
    with pytest.raises(ValueError, match="same words"):
        cka_matrix(layers, [rng.normal(size=(49, 8))])
    with pytest.raises(ValueError, match="constant"):
        cka_matrix([np.ones((5, 3))])


def test_layer_cka_on_real_models():
    sentences = [["The", "bank", "raised", "interest", "rates", "."], ["We", "walked", "along", "the", "river", "bank"],
                 ["She", "plays", "the", "piano", "every", "day", "."]]
    elmo, minilm = load_embedder("elmo-small"), load_embedder("minilm")
    within = layer_cka(elmo, elmo, sentences)
    assert within.shape == (3, 3)
    np.testing.assert_allclose(np.diag(within), 1.0)
    across = layer_cka(elmo, minilm, sentences)
    assert across.shape == (3, 7) and ((across > 0) & (across <= 1 + 1e-9)).all()
    assert layer_cka(elmo, elmo, sentences, max_words=10, seed=3).shape == (3, 3)


def test_relative_depth_and_profile_from_the_committed_results():
    assert relative_depth(2, 4) == 0.5 and relative_depth(0, 0) == 0
    df = load_results(RUNS)
    prof = layer_profile(df, "pos", "conll2000-test", "accuracy", ["minilm", "elmo-small"])
    assert set(prof["model"]) == {"minilm", "elmo-small"}
    for model, last in (("minilm", 6), ("elmo-small", 2)):
        part = prof[prof.model == model]
        assert list(part["layer"]) == list(range(last + 1)) and (part["layers"] == last).all()
        assert part["depth"].iloc[0] == 0 and part["depth"].iloc[-1] == 1
    assert layer_profile(df, "pos", "no-such-dataset", "accuracy").empty


def test_centre_of_gravity_follows_tenney_on_the_running_best_score():
    assert centre_of_gravity([50, 60, 70]) == pytest.approx(1.5)        # gains 10 at layer 1, 10 at 2
    assert centre_of_gravity([50, 80, 70, 90]) == pytest.approx((30 * 1 + 10 * 3) / 40)   # a dip is no gain
    assert np.isnan(centre_of_gravity([90, 80, 70]))
    prof = pd.DataFrame({"model": ["m"] * 3, "layer": [0, 1, 2], "layers": [2] * 3, "depth": [0, .5, 1],
                         "value": [50, 60, 70]})
    cog = centres_of_gravity(prof)
    assert cog.loc[0, "centre_of_gravity"] == pytest.approx(1.5) and cog.loc[0, "depth"] == pytest.approx(0.75)


def test_expected_layer_of_the_saved_scalar_mix_weights():
    assert expected_layer([0.2, 0.3, 0.5]) == pytest.approx(1.3)
    assert expected_layer([1, 1]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        expected_layer([-1, 2])
    table = expected_layers(load_extras(RUNS, "mix"))
    assert {"elmo-small", "minilm"} <= set(table["model"]) and set(table["task"]) == {"pos", "chunk"}
    row = table[(table.model == "elmo-small") & (table.task == "pos")].iloc[0]
    assert row["layers"] == 2 and row["expected_layer"] == pytest.approx(expected_layer(row["weights"]))
    assert 0 <= row["depth"] <= 1
