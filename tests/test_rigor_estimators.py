"""Probe families, control tasks and the MDL online code: real properties on real CoNLL-2000 labels."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from probes.errors import ProbeInputError
from probes.estimators.classifier import LinearProbe
from probes.estimators.control import ControlTask, control_correct, selectivity_rows
from probes.estimators.families import ProbeFamily, make_probe, parse_hidden
from probes.estimators.mdl import SCHEDULE, OrderedCodes, block_ends, online_codelength, uniform_codelength
from probes.stats.units import Units
from probes.tasks.conll import conll_slice


@pytest.fixture(scope="module")
def conll():
    train, test = conll_slice("train", 2000), conll_slice("test", 300)
    flat = lambda sents, f: np.array([x for s in sents for x in getattr(s, f)])
    offsets = np.concatenate([[0], np.cumsum([len(s.words) for s in train])])
    return flat(train, "words"), flat(train, "pos"), flat(test, "words"), flat(test, "pos"), offsets


def test_control_labels_are_fixed_per_word_type(conll):
    words, tags, test_words, _, _ = conll
    control = ControlTask(seed=3).fit(tags)
    labels = control.labels(words)
    per_type: dict[str, set] = {}
    for w, c in zip(words, labels):
        per_type.setdefault(w, set()).add(c)
    assert all(len(c) == 1 for c in per_type.values())
    # The same type gets the same label in the test split, in any order, in any slice.
    lookup = {w: next(iter(c)) for w, c in per_type.items()}
    test_labels = control.labels(test_words[::-1])[::-1]
    assert all(lookup[w] == c for w, c in zip(test_words, test_labels) if w in lookup)
    assert list(control.labels(words[:50])) == list(labels[:50])
    # Another seed is another control task.
    other = ControlTask(seed=4).fit(tags).labels(words)
    assert (other != labels).mean() > 0.5


def test_control_labels_follow_the_task_label_distribution(conll):
    words, tags, _, _, _ = conll
    control = ControlTask(seed=0).fit(tags)
    types = np.unique(words)
    drawn = Counter(control.labels(types))  # one draw per type
    task = Counter(tags)
    classes = sorted(task)
    p = np.array([task[c] for c in classes]) / len(tags)
    q = np.array([drawn[c] for c in classes]) / len(types)
    assert set(drawn) <= set(task)
    # ~9k independent draws: total variation distance from the task's distribution is small.
    assert 0.5 * np.abs(p - q).sum() < 0.03, 0.5 * np.abs(p - q).sum()
    with pytest.raises(ValueError):
        ControlTask().fit([])


def test_selectivity_is_about_zero_on_random_vectors(conll):
    words, tags, test_words, test_tags, _ = conll
    rng = np.random.default_rng(0)
    X, Xt = rng.standard_normal((len(words), 32)), rng.standard_normal((len(test_words), 32))
    new = lambda: LinearProbe(seed=0, device="cpu", epochs=3)
    task = new().fit(X, tags).predict(Xt) == test_tags
    (ctrl,) = control_correct(new, X, words, tags, Xt, test_words, seed=0)
    # Neither task can be read off noise: both probes fall back to a majority label.
    assert abs(100 * task.mean() - 100 * ctrl.mean()) < 5.0, (task.mean(), ctrl.mean())


def test_word_identity_vectors_solve_the_control_task(conll):
    words, tags, test_words, _, _ = conll
    vocab = {w: i for i, w in enumerate(np.unique(np.concatenate([words, test_words])))}
    emb = np.random.default_rng(1).standard_normal((len(vocab), 256)).astype(np.float32)
    X, Xt = emb[[vocab[w] for w in words]], emb[[vocab[w] for w in test_words]]
    new = lambda: LinearProbe(seed=0, device="cpu")
    (ctrl,) = control_correct(new, X, words, tags, Xt, test_words, seed=0)
    seen = np.isin(test_words, words)
    # A type's control label is a function of the type: memorised for seen words (chance otherwise).
    assert ctrl[seen].mean() > 0.7 and ctrl[~seen].mean() < 0.3, (ctrl[seen].mean(), ctrl[~seen].mean())


def test_control_draws_are_averaged_and_their_spread_widens_the_interval(conll):
    words, tags, test_words, test_tags, _ = conll
    rng = np.random.default_rng(0)
    X, Xt = rng.standard_normal((len(words), 16)), rng.standard_normal((len(test_words), 16))
    new = lambda: LinearProbe(seed=0, device="cpu", epochs=2)
    draws = control_correct(new, X, words, tags, Xt, test_words, seed=4, draws=3)
    (single,) = control_correct(new, X, words, tags, Xt, test_words, seed=4)
    assert draws.shape == (3, len(test_words))
    assert np.array_equal(draws[0], single)  # draw 0 is the single-draw run: K = 1 reproduces old results
    assert not np.array_equal(draws[1], draws[0])  # the other draws are other label assignments

    # Rows: the control accuracy is the draws' mean; the selectivity interval covers their disagreement.
    n, sentences = 3000, 150
    units = Units.from_sizes("sentence", [n // sentences] * sentences)
    task = np.random.default_rng(1).random(n) < 0.9
    far_apart = np.stack([np.random.default_rng(k).random(n) < p for k, p in enumerate((0.5, 0.6, 0.7))])
    ctrl_row, sel = selectivity_rows("d", "1", task, far_apart, units=units)
    assert ctrl_row["value"] == round(100 * far_apart.mean(), 2) and ctrl_row["draws"] == sel["draws"] == 3
    assert sel["value"] == round(round(100 * task.mean(), 2) - ctrl_row["value"], 2)
    _, one = selectivity_rows("d", "1", task, far_apart[1], units=units)
    assert one["draws"] == 1
    assert (sel["hi"] - sel["lo"]) > 2 * (one["hi"] - one["lo"]), (sel, one)
    assert sel["unit"] == "sentence" and sel["clusters"] == sentences


def test_linear_family_is_todays_linear_probe():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((600, 10)), rng.integers(0, 3, 600).astype(str)
    a = LinearProbe(seed=2, device="cpu").fit(X, y)
    b = make_probe(ProbeFamily(), seed=2, device="cpu").fit(X, y)
    c = LinearProbe(seed=2, device="cpu", classes=["0", "1", "2"]).fit(X, y)
    assert type(b) is LinearProbe
    for probe in (b, c):
        for pa, pb in zip(a.model_.parameters(), probe.model_.parameters()):
            assert np.array_equal(pa.detach().numpy(), pb.detach().numpy())
    lp = a.predict_log_proba(X[:5])
    assert lp.shape == (5, 3) and np.allclose(np.exp(lp).sum(1), 1, atol=1e-5)


def test_mlp_learns_what_linear_and_rank1_cannot():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (4000, 2)).astype(np.float32)
    xor = np.where((X[:, 0] > 0) ^ (X[:, 1] > 0), "a", "b")
    kw = dict(seed=0, device="cpu", epochs=30, lr=1e-2)
    lin = make_probe(ProbeFamily("linear"), **kw).fit(X[:3000], xor[:3000]).score(X[3000:], xor[3000:])
    mlp = make_probe(ProbeFamily("mlp", hidden=(32, 32)), **kw).fit(X[:3000], xor[:3000]).score(X[3000:], xor[3000:])
    assert lin < 0.7 and mlp > 0.9, (lin, mlp)
    # Four classes along two directions: rank 1 cannot separate them, rank 2 can.
    quad = (X[:, 0] > 0).astype(int) * 2 + (X[:, 1] > 0)
    r1 = make_probe(ProbeFamily("rank", rank=1), **kw).fit(X[:3000], quad[:3000]).score(X[3000:], quad[3000:])
    r2 = make_probe(ProbeFamily("rank", rank=2), **kw).fit(X[:3000], quad[:3000]).score(X[3000:], quad[3000:])
    assert r1 < 0.8 < 0.9 < r2, (r1, r2)
    drop = make_probe(ProbeFamily("mlp", hidden=(16,), dropout=0.3, weight_decay=1e-4), **kw)
    assert drop.fit(X[:3000], quad[:3000]).score(X[3000:], quad[3000:]) > 0.9


@pytest.mark.parametrize(
    "kwargs, flag",
    [
        ({"kind": "cnn"}, "--probe"),
        ({"kind": "mlp", "hidden": ()}, "--hidden"),
        ({"kind": "mlp", "hidden": (1, 2, 3)}, "--hidden"),
        ({"kind": "rank"}, "--rank"),
        ({"dropout": 1.0}, "--dropout"),
        ({"weight_decay": -1.0}, "--weight-decay"),
    ],
)
def test_bad_probe_options_are_one_clear_error(kwargs, flag):
    with pytest.raises(ProbeInputError, match=flag):
        ProbeFamily(**kwargs)
    with pytest.raises(ProbeInputError, match="--hidden"):
        parse_hidden("wide")


def test_block_ends_follow_the_schedule():
    assert SCHEDULE == (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.25, 12.5, 25.0, 50.0, 100.0)
    assert block_ends(8936) == [8, 17, 35, 71, 142, 285, 558, 1117, 2234, 4468, 8936]
    assert block_ends(100) == [1, 3, 6, 12, 25, 50, 100]  # empty leading blocks merged away
    with pytest.raises(ProbeInputError, match="two blocks"):
        block_ends(1)


class UniformProbe:
    """Knows nothing: p(y) = 1/K for every label."""

    def __init__(self, classes, **_):
        self.classes_ = np.asarray(classes)

    def fit(self, X, y):
        return self

    def predict_log_proba(self, X):
        return np.full((len(X), len(self.classes_)), -math.log(len(self.classes_)))


def test_uniform_predictor_codelength_is_n_log2_k(conll):
    _, tags, _, _, offsets = conll
    X = np.zeros((len(tags), 1), np.float32)
    code = online_codelength(UniformProbe, X, tags, offsets)
    K = len(set(tags))
    assert code.bits == pytest.approx(len(tags) * math.log2(K), rel=1e-9)
    assert code.bits == pytest.approx(uniform_codelength(len(tags), K), rel=1e-9)
    assert code.compression == pytest.approx(1.0) and sum(b["tokens"] for b in code.blocks) == len(tags)
    rows = OrderedCodes([code]).rows("d", "0", "control_")
    assert [r["metric"] for r in rows] == ["control_codelength_kbits", "control_compression"]


def test_online_code_compresses_informative_vectors_not_noise(conll):
    _, tags, _, _, offsets = conll
    offsets = offsets[:601]  # the first 600 sentences (~14k tokens) keep it quick
    tags = tags[: offsets[-1]]
    classes = np.unique(tags)
    onehot = (tags[:, None] == classes[None, :]).astype(np.float32)
    rng = np.random.default_rng(0)
    informative = onehot + 0.3 * rng.standard_normal(onehot.shape).astype(np.float32)
    noise = rng.standard_normal(onehot.shape).astype(np.float32)
    new = lambda **kw: LinearProbe(seed=0, device="cpu", epochs=5, **kw)
    good = online_codelength(new, informative, tags, offsets, seed=0)
    bad = online_codelength(new, noise, tags, offsets, seed=0)
    assert good.compression > 3 and good.bits < 0.5 * bad.bits, (good.compression, bad.compression)
    # Noise: the probe learns the label prior (some compression vs uniform), nothing per token.
    entropy = -sum(c / len(tags) * math.log2(c / len(tags)) for c in Counter(tags).values())
    assert bad.bits > 0.95 * entropy * len(tags)
