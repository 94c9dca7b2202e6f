"""Every number with its uncertainty (issue 26, item 5): contextuality, CKA and MDL rows carry a 95% interval,
its unit and its number of units, on real small data (SemCor's first sentences, CoNLL-2000 tags, real models).
The intervals are recomputed here independently (plain loops) where the product code vectorises."""

from __future__ import annotations

import numpy as np
import pytest

from features.extract import get_features
from models.registry import load_embedder
from probes.errors import ProbeInputError
from probes.estimators.cka import cka_interval, cka_matrix
from probes.estimators.classifier import LinearProbe
from probes.estimators.contextuality import MAX_ROUNDS, TARGET_SE, pair_cosines, select_words
from probes.estimators.mdl import online_codelength, online_codelengths, order_interval, shorter_in_all_orders
from probes.registry import RunContext
from probes.tasks.cka import layer_vectors, run_cka
from probes.tasks.conll import conll_slice
from probes.tasks.contextuality import corpus_words, run_contextuality, summary
from probes.tasks.sentences import semcor_sentences

UNITS = {
    "self_similarity": "word",
    "explainable_variance": "word",
    "self_similarity_adj": "word",
    "explainable_variance_adj": "word",
    "intra_sentence_similarity": "sentence",
    "intra_sentence_similarity_adj": "sentence",
    "anisotropy": "pair",
    "mev_baseline": "random set",
}
LIMIT, MIN_OCC = 40, 3


@pytest.fixture(scope="module")
def elmo():
    return load_embedder("elmo-small")


@pytest.fixture(scope="module")
def feature_root(tmp_path_factory):
    return tmp_path_factory.mktemp("features")


@pytest.fixture(scope="module")
def contextuality(elmo, feature_root):
    ctx = RunContext(limit=LIMIT, feature_root=feature_root, show_progress=False)
    return run_contextuality(elmo, None, ctx, min_occurrences=MIN_OCC)


def _layers(elmo, sentences, root) -> list[np.ndarray]:
    """The run's own (cached, float16) vectors of every layer."""
    feats = get_features(elmo, f"contextuality-semcor-first{LIMIT}", sentences, show_progress=False, root=root)
    return [np.asarray(feats.layer(j), dtype=np.float64) for j in range(elmo.num_layers)]


def test_every_contextuality_row_has_an_interval_around_its_value_with_its_unit(contextuality):
    res = contextuality
    assert len(res.rows) == 3 * len(UNITS)
    words = res.extra["words_measured"]
    for row in res.rows:
        assert row["lo"] <= row["value"] <= row["hi"], row
        assert row["unit"] == UNITS[row["metric"]], row
        if row["unit"] == "word":
            assert row["clusters"] == row["n"] <= words
        elif row["unit"] == "sentence":
            assert row["clusters"] == row["n"] <= res.extra["sentences"] == LIMIT
        elif row["unit"] == "pair":
            assert row["clusters"] == row["n"] > 2000 and 0 < row["se"] < TARGET_SE
        else:  # the MEV baseline: rounds of random sets until its SE is small, at most MAX_ROUNDS (53 words here)
            assert (
                row["n"] <= words
                and row["se"] > 0
                and (row["se"] < TARGET_SE or row["clusters"] == MAX_ROUNDS * row["n"])
            )
    ss = {r["layer"]: r for r in res.rows if r["metric"] == "self_similarity"}
    assert ss["0"]["hi"] - ss["0"]["lo"] < 1e-3 < ss["2"]["hi"] - ss["2"]["lo"]  # char layer: 1.0 for every word
    assert "[" in summary(res)[1]  # the printout shows the intervals too


def _selection(seed: int = 0):
    _, sentences = semcor_sentences(LIMIT)
    offsets, sentence_of_row, keys = corpus_words(sentences)
    sel = select_words(keys, sentence_of_row, min_occurrences=MIN_OCC, max_occurrences=50, max_words=1000, seed=seed)
    return sentences, offsets, sel


def test_the_anisotropy_baseline_draws_pairs_until_its_standard_error_is_below_the_printed_precision(
    contextuality, elmo, feature_root
):
    sentences, _, sel = _selection()
    for row in (r for r in contextuality.rows if r["metric"] == "anisotropy"):
        X = _layers(elmo, sentences, feature_root)[int(row["layer"])]
        pairs = sel.pairs(row["clusters"])
        assert len(pairs) == row["clusters"] and (sel.keys[pairs[:, 0]] != sel.keys[pairs[:, 1]]).all()
        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        cos = np.concatenate([np.einsum("id,id->i", U[p[:, 0]], U[p[:, 1]]) for p in np.array_split(pairs, 50)])
        se = cos.std(ddof=1) / np.sqrt(len(cos))
        assert se < 0.0005 and row["se"] == pytest.approx(se, abs=1e-6)
        assert row["value"] == round(cos.mean(), 4) and row["lo"] == pytest.approx(cos.mean() - 1.96 * se, abs=1e-4)
        few = pair_cosines(X, sel.pairs(2000))  # the old fixed 2,000 pairs are not enough: the SE chose more
        assert few.std(ddof=1) / np.sqrt(len(few)) > 0.0005 and len(pairs) > 2000
        np.testing.assert_array_equal(pairs[:2000], sel.pairs(2000))  # one seeded stream, extended


def test_a_plain_loop_bootstrap_over_words_gives_the_same_self_similarity_interval(contextuality, elmo, feature_root):
    sentences, _, sel = _selection()
    X = _layers(elmo, sentences, feature_root)[2]
    per_word = []
    for rows in sel.rows:  # the mean cosine over all ordered pairs of a word's occurrences, by hand
        V = X[rows] / np.linalg.norm(X[rows], axis=1, keepdims=True)
        per_word.append(np.mean([V[i] @ V[j] for i in range(len(V)) for j in range(len(V)) if i != j]))
    per_word = np.array(per_word)
    rng = np.random.default_rng(2026)
    means = [per_word[rng.integers(0, len(per_word), len(per_word))].mean() for _ in range(4000)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    (row,) = [r for r in contextuality.rows if r["metric"] == "self_similarity" and r["layer"] == "2"]
    assert row["value"] == round(per_word.mean(), 4) and row["clusters"] == len(per_word)
    width = hi - lo
    assert width > 0.01
    assert row["lo"] == pytest.approx(lo, abs=0.1 * width) and row["hi"] == pytest.approx(hi, abs=0.1 * width)


@pytest.fixture(scope="module")
def cka(elmo):
    return run_cka(elmo, None, RunContext(limit=LIMIT, show_progress=False), against="glove-6b-50d", resamples=100)


def test_every_cka_cell_has_an_interval_over_sentences(cka):
    assert len(cka.rows) == 3 * 3 + 3 * 1
    for row in cka.rows:
        assert row["lo"] <= row["value"] <= row["hi"] and row["unit"] == "sentence" and row["clusters"] == LIMIT, row
    off = [r for r in cka.rows if r["layer"] != r["metric"].removeprefix("cka_") or " vs " in r["dataset"]]
    assert all(r["hi"] - r["lo"] > 0.005 for r in off)  # real spread off the diagonal
    assert cka.extra["bootstrap_s"] < cka.extra["total_s"] and cka.params["resamples"] == 100


def test_the_vectorised_cka_bootstrap_is_linear_cka_on_the_resampled_sentences(elmo):
    sentences = semcor_sentences(12)[1]
    layers = [np.asarray(v, dtype=np.float64) for v in layer_vectors(elmo, sentences)]
    groups = np.repeat(np.arange(len(sentences)), [len(s) for s in sentences])
    lo, hi = cka_interval(layers, None, groups, resamples=40, seed=5)
    # the same resamples, by hand: each sentence's words repeated as often as it was drawn
    draws = np.random.default_rng(5).multinomial(len(sentences), np.full(len(sentences), 1 / len(sentences)), 40)
    by_hand = []
    for w in draws:
        rows = np.concatenate([np.flatnonzero(groups == s) for s in range(len(sentences)) for _ in range(w[s])])
        by_hand.append(cka_matrix([X[rows] for X in layers]))  # the plain estimator on the repeated words
    by_hand = np.array(by_hand)
    by_hand -= by_hand.mean(axis=0) - cka_matrix(layers)  # centred on the estimate (estimators/cka.py)
    np.testing.assert_allclose(lo, np.percentile(by_hand, 2.5, axis=0), atol=1e-9)
    np.testing.assert_allclose(hi, np.percentile(by_hand, 97.5, axis=0), atol=1e-9)


@pytest.fixture(scope="module")
def conll_glove():
    train = conll_slice("train", 100)
    X = np.concatenate([o.vectors[0] for o in load_embedder("glove-6b-50d").embed([s.words for s in train])])
    tags = np.array([t for s in train for t in s.pos])
    offsets = np.concatenate([[0], np.cumsum([len(s.words) for s in train])])
    return np.asarray(X, dtype=np.float32), tags, offsets


def test_mdl_over_three_data_orders_reports_the_mean_and_an_interval_that_holds_every_order(conll_glove):
    X, tags, offsets = conll_glove
    new = lambda **kw: LinearProbe(seed=0, device="cpu", epochs=2, **kw)
    codes = online_codelengths(new, X, tags, offsets, orders=3, seed=0)
    kbits = codes.orders_kbits
    assert len(set(np.round(kbits, 3))) == 3  # the order matters: three different codelengths
    assert codes.codes[0].bits == online_codelength(new, X, tags, offsets, seed=0).bits  # order 0 = the old one
    length, compression = codes.rows("conll2000-train", "0")
    for row, per_order in ((length, kbits), (compression, [c.compression for c in codes.codes])):
        assert row["unit"] == "data order" and row["clusters"] == 3 and len(row["orders"]) == 3
        assert row["lo"] <= row["value"] <= row["hi"]
        assert all(row["lo"] <= v + 0.005 and v - 0.005 <= row["hi"] for v in per_order), (row, per_order)
    assert length["value"] == round(kbits.mean(), 2)
    half = 4.302653 * kbits.std(ddof=1) / np.sqrt(3)  # t(0.975, 2): the documented t-interval
    assert length["lo"] == pytest.approx(kbits.mean() - half, abs=0.01)
    assert compression["lo"] == pytest.approx(codes.codes[0].uniform_bits / 1024 / (kbits.mean() + half), abs=0.01)
    noise = np.random.default_rng(0).standard_normal(X.shape).astype(np.float32)
    worse = online_codelengths(new, noise, tags, offsets, orders=3, seed=0)
    assert shorter_in_all_orders(codes, worse) and not shorter_in_all_orders(worse, codes)
    one = online_codelengths(new, X, tags, offsets, orders=1, seed=0).rows("d", "0")[0]
    assert one["lo"] is None and one["clusters"] == 1  # one order: no interval, said so
    with pytest.raises(ProbeInputError, match="at least one data order"):
        online_codelengths(new, X, tags, offsets, orders=0)


def test_order_interval_contains_every_order_even_when_the_t_interval_would_not():
    values = [0.0] * 9 + [10.0]  # one outlying order of ten: t-interval (−0.6, 2.6) misses it
    lo, hi = order_interval(values)
    assert lo <= 0 and hi == 10.0
    assert np.isnan(order_interval([3.0])[0])
