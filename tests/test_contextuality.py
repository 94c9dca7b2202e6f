"""Contextuality (Ethayarajh 2019): the measures' defining properties, a static and a contextual model on a
real SemCor slice, and ``python -m probes contextuality`` end to end (bad input: one error line)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from models.registry import load_embedder
from probes.cli import main
from probes.estimators.contextuality import (explainable_variance, intra_sentence_similarity, layer_measures, select_words,
                                  self_similarity, word_profile)
from probes.tasks.contextuality import run_contextuality, semcor_sentences
from probes.registry import RunContext
from probes.results import load_results


def test_self_similarity_is_the_mean_pairwise_cosine():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 5))
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    C = U @ U.T
    assert self_similarity(X) == pytest.approx((C.sum() - 7) / 42)
    assert self_similarity(np.tile(X[:1], (4, 1)) * np.array([[1], [2], [3], [0.5]])) == pytest.approx(1.0)
    assert np.isnan(self_similarity(X[:1]))
    assert self_similarity(np.vstack([X[:2], np.zeros((3, 5))])) == pytest.approx(C[0, 1])   # zero rows left out


def test_explainable_variance_of_rank_one_is_one_and_of_orthogonal_rows_is_one_over_n():
    v = np.arange(1.0, 6.0)
    assert explainable_variance(np.outer([1, -2, 3], v)) == pytest.approx(1.0)
    assert explainable_variance(np.eye(4)) == pytest.approx(0.25)


def test_intra_sentence_similarity_of_identical_words_is_one():
    assert intra_sentence_similarity(np.ones((3, 4))) == pytest.approx(1.0)
    assert np.isnan(intra_sentence_similarity(np.ones((1, 4))))


def test_adjusted_measures_of_random_isotropic_vectors_are_about_zero():
    rng = np.random.default_rng(1)
    sentences = 400
    lengths = np.full(sentences, 10)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sentence_of_row = np.repeat(np.arange(sentences), lengths)
    keys = np.array([f"w{i}" for i in rng.integers(0, 60, size=offsets[-1])], dtype=object)
    X = rng.normal(size=(offsets[-1], 256))
    sel = select_words(keys, sentence_of_row, min_occurrences=5, max_occurrences=40, pairs=3000, seed=0)
    m = layer_measures(X, sel, offsets)
    assert abs(m["anisotropy"][0]) < 0.01
    assert abs(m["self_similarity_adj"][0]) < 0.01
    assert abs(m["explainable_variance_adj"][0]) < 0.01
    # The sentence mean contains the word itself: for n random words E[cos] ≈ 1/√n, not 0 (as defined).
    assert m["intra_sentence_similarity_adj"][0] == pytest.approx(1 / np.sqrt(10), abs=0.02)


def test_selection_is_seeded_one_occurrence_per_sentence_and_refuses_rare_words():
    keys = np.array(["a", "a", "b", "a", "", "a", "b", "a"], dtype=object)
    sent = np.array([0, 0, 0, 1, 1, 2, 2, 3])
    sel = select_words(keys, sent, min_occurrences=4, seed=3)
    assert sel.words == ("a",) and list(sel.rows[0]) == [0, 3, 5, 7]
    assert (sent[sel.pairs[:, 0]] != sent[sel.pairs[:, 1]]).all() and (keys[sel.pairs] != "").all()
    assert (keys[sel.pairs[:, 0]] != keys[sel.pairs[:, 1]]).all()
    again = select_words(keys, sent, min_occurrences=4, seed=3)
    np.testing.assert_array_equal(sel.pairs, again.pairs)
    with pytest.raises(ValueError, match="at least 5 sentences"):
        select_words(keys, sent, min_occurrences=5)


def test_word_profile_per_layer_for_the_polysemy_explorer():
    rng = np.random.default_rng(2)
    static = np.tile(rng.normal(size=(1, 1, 8)), (1, 5, 1))
    vectors = np.concatenate([static, rng.normal(size=(1, 5, 8))])
    out = word_profile(vectors)
    assert out["self_similarity"][0] == pytest.approx(1.0) and out["self_similarity"][1] < 0.9
    assert out["explainable_variance"][0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="2 occurrences"):
        word_profile(vectors[:, :1])


def rows_of(res, metric):
    return {r["layer"]: r["value"] for r in res.rows if r["metric"] == metric}


def test_a_static_models_self_similarity_is_one_on_semcor(tmp_path):
    res = run_contextuality(load_embedder("glove-6b-50d"), RunContext(limit=80, feature_root=tmp_path, show_progress=False),
                            min_occurrences=3)
    assert rows_of(res, "self_similarity") == {"0": 1.0}
    assert rows_of(res, "explainable_variance") == {"0": 1.0}
    assert rows_of(res, "self_similarity_adj")["0"] == pytest.approx(1 - rows_of(res, "anisotropy")["0"], abs=1e-4)
    assert res.dataset == "semcor-first80" and res.extra["words_measured"] > 20


def test_elmo_layers_are_contextual_and_layer_0_is_not(tmp_path):
    emb = load_embedder("elmo-small")
    res = run_contextuality(emb, RunContext(limit=60, feature_root=tmp_path, show_progress=False, seed=1),
                            min_occurrences=3)
    ss = rows_of(res, "self_similarity")
    assert set(ss) == {"0", "1", "2"}
    assert ss["0"] == pytest.approx(1.0, abs=1e-3)   # the char-CNN layer: one vector per word form
    assert ss["1"] < 0.95 and ss["2"] < 0.95
    assert {r["metric"] for r in res.rows} >= {"anisotropy", "mev_baseline", "intra_sentence_similarity_adj"}


def test_cli_writes_results_and_tables(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(["the bank raised rates today ."] * 3 + ["we sat by the river bank ."] * 3
                                + ["a bank is a place ."]), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["contextuality", "--model", "glove-6b-50d", "--corpus", str(corpus), "--min-occurrences", "3",
                 "--out", str(out)])
    assert code == 0
    df = load_results(out / "runs")
    assert set(df["probe"]) == {"contextuality"} and set(df["layer"]) == {"0"}
    assert df.loc[df.metric == "self_similarity", "value"].item() == 1.0
    saved = json.loads(next((out / "runs").glob("*.json")).read_text())
    assert saved["command"].startswith("python -m probes contextuality") and saved["extra"]["words_measured"] >= 2
    assert "Self-similarity" in (out / "tables.md").read_text()


@pytest.mark.parametrize("args, fragment", [
    (["--min-occurrences", "1"], "at least 2 sentences"),
    (["--corpus", "/no/such/file.txt"], "no such file"),
    (["--words", "zzzzqqq"], "No word among"),
    (["--pairs", "0"], "positive"),
])
def test_bad_requests_end_with_one_error_line(args, fragment, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    code = main(["contextuality", "--model", "glove-6b-50d", "--limit", "40", "--results", str(tmp_path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and fragment in err[0], err


def test_semcor_sentences_split_multiword_tokens():
    name, sentences = semcor_sentences(5)
    assert name == "semcor-first5" and len(sentences) == 5
    assert not any("_" in w for s in sentences for w in s)
