"""Linear CKA (probes/estimators/cka.py, the ``cka`` probe probes/tasks/cka.py) and layer profiles
(probes/stats/profiles.py): defining properties, real models, the command line and ``reproduce``, and the
committed results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group

from corpora.paths import REPO_ROOT
from models.registry import load_embedder
from probes.__main__ import main
from probes.estimators.cka import cka_matrix, linear_cka
from probes.registry import ProbeSpec, RunContext, builtin_probe_names, get_probe
from probes.results import load_extras, load_results, results_frame
from probes.stats.profiles import (
    centre_of_gravity,
    centres_of_gravity,
    expected_layer,
    expected_layers,
    layer_profile,
    relative_depth,
)
from probes.tasks.cka import cka_tables, layer_vectors, run_cka
from probes.tasks.sentences import semcor_sentences

RUNS = REPO_ROOT / "docs" / "results" / "runs"


def test_cka_of_a_layer_with_itself_is_one_and_invariant_to_rotation_and_scaling():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 16)) @ rng.normal(size=(16, 16))
    Y = np.tanh(X[:, :10]) + 0.5 * rng.normal(size=(200, 10))
    Q = ortho_group.rvs(16, random_state=1)
    assert linear_cka(X, X) == pytest.approx(1.0)
    assert linear_cka(X @ Q, X) == pytest.approx(1.0)
    assert linear_cka(3.7 * X @ Q, Y) == pytest.approx(linear_cka(X, Y))
    assert linear_cka(X + 5.0, Y) == pytest.approx(linear_cka(X, Y))  # centred: a shift changes nothing
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


def test_the_cka_probe_within_a_model_and_across_two():
    elmo = load_embedder("elmo-small")
    res = run_cka(elmo, None, RunContext(limit=12, show_progress=False), against="minilm", max_vectors=150)
    within, across = np.array(res.extra["matrix"]), np.array(res.extra["against"]["matrix"])
    assert within.shape == (3, 3) and across.shape == (3, 7) and res.extra["against"]["layers"] == list("0123456")
    np.testing.assert_allclose(np.diag(within), 1.0)
    np.testing.assert_allclose(within, within.T)
    assert ((across > 0) & (across <= 1 + 1e-9)).all()
    cells = {(r["dataset"], r["layer"], r["metric"]): r["value"] for r in res.rows}  # the rows are the cells
    assert len(cells) == len(res.rows) == 3 * 3 + 3 * 7 and {r["n"] for r in res.rows} == {150}
    assert cells["semcor-first12", "1", "cka_2"] == cells["semcor-first12", "2", "cka_1"] == round(within[1, 2], 4)
    assert cells["semcor-first12 vs minilm", "2", "cka_6"] == round(across[2, 6], 4)
    assert run_cka(elmo, None, RunContext(limit=12), max_vectors=150).extra["matrix"] == res.extra["matrix"]  # seeded
    # every word (no sample): exactly the estimator on the layers' vectors of SemCor's first sentences
    full = run_cka(elmo, None, RunContext(limit=5), max_vectors=None)
    np.testing.assert_array_equal(full.extra["matrix"], cka_matrix(layer_vectors(elmo, semcor_sentences(5)[1])))
    table = cka_tables(results_frame([res]))["cka"]
    assert list(table.columns) == ["model", "dataset", "layer", *"0123456"] and len(table) == 6
    lo, hi = np.array(res.extra["lo"]), np.array(res.extra["hi"])
    assert table.iloc[0, 3:6].tolist() == [f"{v:.3f} [{a:.3f}, {b:.3f}]" for v, a, b in zip(within[0], lo[0], hi[0])]
    assert all(r["lo"] <= r["value"] <= r["hi"] and r["unit"] == "sentence" and r["clusters"] == 12 for r in res.rows)


def test_cka_is_a_probe_of_the_command_line_and_reproduce(tmp_path, monkeypatch, capsys):
    spec = get_probe("cka")
    assert isinstance(spec, ProbeSpec) and spec.run is run_cka and "cka" not in builtin_probe_names()
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "cka",
                "--model",
                "glove-6b-50d",
                "--against",
                "elmo-small",
                "--limit",
                "8",
                "--results",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    assert "glove-6b-50d layers × elmo-small layers" in capsys.readouterr().out
    df = load_results(tmp_path / "r")
    assert set(df.dataset) == {"semcor-first8", "semcor-first8 vs elmo-small"}
    assert df[(df.dataset == "semcor-first8")].value.tolist() == [1.0]  # a static model: one layer, itself
    out = tmp_path / "out"
    assert (
        main(["reproduce", "--models", "glove-6b-50d,elmo-small", "--probes", "cka", "--limit", "8", "--out", str(out)])
        == 0
    )
    rows = load_results(out / "runs")
    # a one-layer model alone: its CKA with itself is 1 by definition, so reproduce skips it and says why
    assert set(rows.model) == {"elmo-small"} and set(rows.probe) == {"cka"}
    assert "skipped cka: glove-6b-50d has one layer" in capsys.readouterr().out
    assert len(rows[rows.model == "elmo-small"]) == 9
    assert "## Linear CKA between layers" in (out / "tables.md").read_text()
    assert main(["cka", "--model", "glove-6b-50d", "--max-vectors", "0", "--results", str(tmp_path / "r")]) == 2
    assert "--max-vectors 0" in capsys.readouterr().err
    assert main(["cka", "--model", "glove-6b-50d", "--max-vectors", "5000", "--results", str(tmp_path / "r")]) == 2
    assert "at most 4,000" in capsys.readouterr().err  # the interval's bootstrap holds a words² Gram matrix


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
    assert centre_of_gravity([50, 60, 70]) == pytest.approx(1.5)  # gains 10 at layer 1, 10 at 2
    assert centre_of_gravity([50, 80, 70, 90]) == pytest.approx((30 * 1 + 10 * 3) / 40)  # a dip is no gain
    assert np.isnan(centre_of_gravity([90, 80, 70]))
    # a codelength: fewer bits is better, so its falls are the gains (elmo-small's 117.3, 60.1, 63.6 kbits read as
    # "no layer beats layer 0", MiniLM's rising codelength as a centre at its worst layer)
    assert centre_of_gravity([117.3, 60.1, 63.6], lower_is_better=True) == pytest.approx(1.0)
    assert np.isnan(centre_of_gravity([70, 80, 90], lower_is_better=True))
    prof = pd.DataFrame(
        {"model": ["m"] * 3, "layer": [0, 1, 2], "layers": [2] * 3, "depth": [0, 0.5, 1], "value": [50, 60, 70]}
    )
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


def test_cka_refuses_a_model_that_knows_almost_none_of_the_words(tmp_path, data_root):
    """An 18-word vectors file against MiniLM: CKA gave .23 .32 … with intervals for vectors that were nearly all
    zeros, where the POS probe and the Syntax page refuse that model (an audit). The dataset is checked as an
    extraction checks it, and the app says it as the text's problem, not "the model could not be loaded"."""
    from app_pages.common import friendly_message
    from models.errors import UnknownTextError

    words = [
        "the",
        "of",
        "and",
        "to",
        "a",
        "in",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "he",
    ]
    lines = [
        f"{w} " + " ".join(f"{x:.3f}" for x in np.random.default_rng(i).normal(size=4)) for i, w in enumerate(words)
    ]
    (tmp_path / "tiny.vec").write_text(f"{len(words)} 4\n" + "\n".join(lines) + "\n", encoding="utf-8")
    tiny = load_embedder(str(tmp_path / "tiny.vec"))
    from models.registry import unload_embedder

    try:
        with pytest.raises(UnknownTextError, match="words to embed are not in its vocabulary") as caught:
            run_cka(tiny, None, RunContext(limit=5, show_progress=False), against="minilm")
    finally:
        unload_embedder(str(tmp_path / "tiny.vec"))
    message = friendly_message(caught.value, "compute CKA")
    assert message.startswith("Could not compute CKA: tiny") and "could not be loaded" not in message


def test_expected_layers_read_the_full_run_not_a_newer_slice_or_an_older_version(tmp_path):
    """The newest mix run of any kind gave the expected layer: a `--train-limit` run saved after the full one
    (elmo-small chunk 1.04 instead of 1.149), or an earlier version's weights, would have stood for the model."""
    import dataclasses

    from probes.results import read_results, save_result

    full = next(
        r
        for r in read_results(RUNS)
        if r.probe == "mix" and r.model == "elmo-small" and not r.params.get("train_limit")
    )
    expected = expected_layers(load_extras(RUNS, "mix")).set_index(["model", "task"])
    folder = tmp_path / "runs"
    save_result(full, folder)
    slice_weights = {
        t: {row: {**w, "s": [0.9, 0.05, 0.05]} for row, w in rows.items()} for t, rows in full.extra["mix"].items()
    }
    newer = dict(timestamp="2099-01-01T00:00:00+00:00")
    save_result(
        dataclasses.replace(
            full, params={**full.params, "train_limit": 50}, extra={**full.extra, "mix": slice_weights}, **newer
        ),
        folder,
    )
    save_result(
        dataclasses.replace(
            full,
            fingerprint="another",
            extra={**full.extra, "mix": slice_weights},
            timestamp="2000-01-01T00:00:00+00:00",
        ),
        folder,
    )
    got = expected_layers(load_extras(folder, "mix")).set_index(["model", "task"])
    assert got.loc[("elmo-small", "chunk"), "expected_layer"] == expected.loc[("elmo-small", "chunk"), "expected_layer"]
