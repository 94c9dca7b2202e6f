"""The structural probe: trees from CoNLL-U (bad heads are one clear error), tree-encoding vectors give
UUAS 100, position-only vectors give the chain's UUAS, the MST decoder agrees with brute force, the CLI
runs it on UD EWT and on the user's files."""

from __future__ import annotations

import itertools
import json
from itertools import islice
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch

from corpora.conllu import DepTree, iter_conllu, iter_trees
from corpora.format_errors import DataFormatError
from probes.__main__ import main
from probes.estimators.structural import StructuralProbe
from probes.estimators.tree_metrics import (
    LENGTHS,
    GoldTrees,
    chain_edges,
    length_interval,
    length_macro,
    mst_edges,
    random_tree,
    spearman_by_length,
    structural_rows,
    tree_distances,
    uuas_row,
)
from probes.registry import RunContext
from probes.results import load_results
from probes.stats.intervals import grouped_interval
from probes.stats.strata import _pool_bins, strata_mean_interval
from probes.tasks.structural import structural_baselines

# Four sentences: ID FORM UPOS HEAD DEPREL. Sentence 2 has a multiword token (4-5) and an empty node (2.1),
# which are not words; sentence 3 ends in punctuation (kept in the tree, left out of the metrics).
TREEBANK = [
    [("The", "DET", 2, "det"), ("dog", "NOUN", 3, "nsubj"), ("barked", "VERB", 0, "root")],
    [
        ("I", "PRON", 2, "nsubj"),
        ("saw", "VERB", 0, "root"),
        ("the", "DET", 4, "det"),
        ("cat", "NOUN", 2, "obj"),
        ("on", "ADP", 7, "case"),
        ("the", "DET", 7, "det"),
        ("mat", "NOUN", 2, "obl"),
    ],
    [
        ("Birds", "NOUN", 2, "nsubj"),
        ("sing", "VERB", 0, "root"),
        ("in", "ADP", 5, "case"),
        ("tall", "ADJ", 5, "amod"),
        ("trees", "NOUN", 2, "obl"),
        ("and", "CCONJ", 7, "cc"),
        ("rest", "VERB", 2, "conj"),
        (".", "PUNCT", 2, "punct"),
    ],
    [
        ("Rain", "NOUN", 2, "nsubj"),
        ("fell", "VERB", 0, "root"),
        ("hard", "ADV", 2, "advmod"),
        ("!", "PUNCT", 2, "punct"),
    ],
]


def conllu_text(sentences=TREEBANK) -> str:
    out = []
    for k, sent in enumerate(sentences):
        out.append(f"# sent_id = s{k + 1}\n")
        for i, (form, upos, head, rel) in enumerate(sent, 1):
            if k == 1 and i == 4:
                out.append("4-5\tcat on\t_\t_\t_\t_\t_\t_\t_\t_\n")
            if k == 1 and i == 3:
                out.append("2.1\tsaw\tsee\tVERB\t_\t_\t_\t_\t2:conj\t_\n")
            out.append(f"{i}\t{form}\t{form.lower()}\t{upos}\t_\t_\t{head}\t{rel}\t_\t_\n")
        out.append("\n")
    return "".join(out)


@pytest.fixture()
def treebank(tmp_path) -> Path:
    path = tmp_path / "four.conllu"
    path.write_text(conllu_text(), encoding="utf-8")
    return path


@pytest.fixture()
def one_thread():
    """Tiny tensors: one thread spares the shared CPU's thread hand-offs (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tree_vectors(tree: DepTree) -> np.ndarray:
    """An isometric embedding of the tree metric: word i = the sum of one-hot vectors of the edges on its path
    to the root (edge j = word j -> its head), so ‖vᵢ − vⱼ‖² is the number of edges between i and j."""
    n = len(tree.words)
    V = np.zeros((n, 16), np.float32)
    for i in range(n):
        j = i
        while tree.heads[j] != 0:
            V[i, j] = 1.0
            j = tree.heads[j] - 1
    return V


def test_trees_read_heads_and_relations_skipping_multiword_tokens_and_empty_nodes(treebank):
    trees = list(iter_trees(treebank))
    assert [len(t.words) for t in trees] == [3, 7, 8, 4]
    assert trees[1].words == ("I", "saw", "the", "cat", "on", "the", "mat")
    assert trees[1].heads == (2, 0, 4, 2, 7, 7, 2) and trees[1].deprels[3] == "obj"
    assert trees[2].scored.tolist() == [True] * 7 + [False]  # punctuation kept in the tree, not scored
    assert [s.words for s in iter_conllu(treebank, "DEPREL")] == [t.words for t in trees]  # same words as the tagger
    # the tree metric: path lengths; 'the'(3) -> cat(4) -> saw(2) <- mat(7) <- on(5)
    assert tree_distances(trees[1].heads)[2, 4] == 4 and GoldTrees.of(trees).depths(1).tolist() == [1, 0, 2, 1, 2, 2, 1]


def test_real_ewt_dev_trees(data_root):
    path = data_root / "ud_english_ewt" / "en_ewt-ud-dev.conllu"
    trees = list(iter_trees(path))
    assert len(trees) == 2001 and all(t.heads.count(0) == 1 for t in trees)
    assert [t.words for t in trees] == [s.words for s in iter_conllu(path, "UPOS")]
    assert [t.upos for t in trees[:50]] == [s.labels for s in islice(iter_conllu(path, "UPOS"), 50)]


@pytest.mark.parametrize(
    "change, message",
    [
        (("\t3\tnsubj", "\t9\tnsubj"), ":3: HEAD '9' of 'dog' is no word of its 3-word sentence"),
        (("\t3\tnsubj", "\t_\tnsubj"), ":3: HEAD '_' of 'dog'"),
        (("\t3\tnsubj", "\t²\tnsubj"), ":3: HEAD '²' of 'dog'"),  # a digit to str.isdigit, not to int()
        (("\t0\troot", "\t1\troot"), ":2: the sentence has 0 roots"),
        (("\t2\tdet", "\t0\tdet"), ":2: the sentence has 2 roots"),
        (("1\tThe\tthe\tDET\t_\t_\t2", "1\tThe\tthe\tDET\t_\t_\t1"), ":2: HEAD of 'The' leads into a cycle"),
    ],
)
def test_malformed_heads_are_a_data_format_error_at_their_line(tmp_path, change, message):
    bad = tmp_path / "bad.conllu"
    bad.write_text(conllu_text().replace(*change, 1), encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"^{bad}{message}"):
        list(iter_trees(bad))
    assert len(list(iter_conllu(bad, "UPOS"))) == 4  # the label reader needs no tree


def test_tree_encoding_vectors_give_uuas_100_and_dspr_1_through_the_estimator(treebank, one_thread):
    gold = GoldTrees.of(list(iter_trees(treebank)))
    X = [tree_vectors(t) for t in gold.trees]
    exact = structural_rows("four", "x", "distance", list(gold.distances), gold)
    assert [(r["metric"], r["value"]) for r in exact] == [("UUAS", 100.0), ("DSpr", 100.0)]
    for kind in ("distance", "depth"):
        probe = StructuralProbe(kind, rank=16, epochs=250, patience=250, batch_size=4, lr=0.02)
        pred = probe.fit(X, gold, X, gold).predict(X)  # early stopping keeps the best epoch
        first, spearman = structural_rows("four", "x", kind, pred, gold)
        assert first["metric"] == ("UUAS" if kind == "distance" else "root_acc") and first["value"] == 100.0
        assert all(np.array_equal(np.round(p), t) for p, t in zip(pred, gold.targets(kind)))  # the metric itself
        # exact up to the fit's last digits: the rounded prediction has Spearman 1 (ties of the tree metric)
        rounded = structural_rows("four", "x", kind, [np.round(p) for p in pred], gold)[1]
        assert rounded["value"] == 100.0 and spearman["value"] > 85


def test_early_stopping_follows_a_dev_loss_above_one(treebank, one_thread):
    """The shared loop keeps the highest dev score from -1 up: a dev loss > 1 must still count as progress
    (a negated loss never did, and training stopped after ``patience`` epochs at its last, not best, state)."""
    gold = GoldTrees.of(list(iter_trees(treebank)))
    X = [30 * tree_vectors(t) for t in gold.trees]  # the start far off: squared distances ~100s, dev loss above 1
    probe = StructuralProbe("distance", rank=16, epochs=5, patience=2, batch_size=4, lr=0.001).fit(X, gold, X, gold)
    losses = [h["dev_loss"] for h in probe.history_]
    assert len(losses) == 5 and losses[-1] > 1 and losses == sorted(losses, reverse=True), losses


def _ewt(data_root, split, n):
    return GoldTrees.of(list(islice(iter_trees(data_root / "ud_english_ewt" / f"en_ewt-ud-{split}.conllu"), n)))


def test_position_only_vectors_give_the_chain_baseline_and_random_ones_far_less(data_root, one_thread):
    train, dev = _ewt(data_root, "train", 300), _ewt(data_root, "dev", 200)
    chain = uuas_row("dev", "baseline", [chain_edges(t) for t in dev.trees], dev.trees)["value"]
    rng = np.random.default_rng(0)

    def walk(gold):  # a random walk along the sentence: distances grow with |i − j|, no syntax
        return [np.cumsum(rng.standard_normal((len(t.words), 32)), 0).astype(np.float32) for t in gold.trees]

    def iid(gold):  # independent random vectors: nothing at all
        return [rng.standard_normal((len(t.words), 32)).astype(np.float32) for t in gold.trees]

    scores = {}
    for name, make in (("walk", walk), ("iid", iid)):
        Xtr, Xdv = make(train), make(dev)
        probe = StructuralProbe("distance", epochs=3, seed=0).fit(Xtr, train, Xdv, dev)
        scores[name] = probe.score(Xdv, dev)
    assert 35 < chain < 60
    assert abs(scores["walk"] - chain) < 5, (scores, chain)
    assert scores["iid"] < chain - 20, (scores, chain)


def _brute_force_mst(dist: np.ndarray) -> set[tuple[int, int]]:
    n = len(dist)
    edges = list(itertools.combinations(range(n), 2))
    best, best_w = set(), np.inf
    for subset in itertools.combinations(edges, n - 1):
        if nx.is_tree(nx.Graph(list(subset))) if n > 1 else True:
            w = sum(dist[i, j] for i, j in subset)
            if len({v for e in subset for v in e}) == n and w < best_w:
                best, best_w = set(subset), w
    return best


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_mst_decoder_matches_brute_force(n):
    rng = np.random.default_rng(n)
    for _ in range(4):
        a = rng.random((n, n))
        dist = a + a.T
        np.fill_diagonal(dist, 0)
        assert mst_edges(dist) == _brute_force_mst(dist)
    # zero distances (two identical vectors) are still edges: scipy would read a 0 as "no edge"
    assert len(mst_edges(np.zeros((n, n)))) == n - 1


def test_random_control_trees_keep_the_words_and_are_trees(treebank):
    rng = np.random.default_rng(0)
    for tree in iter_trees(treebank):
        rand = random_tree(tree, rng)
        assert rand.words == tree.words and rand.heads.count(0) == 1
        assert np.isfinite(tree_distances(rand.heads)).all()  # connected: every word reaches every other


def test_chain_baseline_and_cli_run_on_ewt(tmp_path, capsys):
    ctx = RunContext(limit=20, show_progress=False)
    (base,) = structural_baselines(ctx)
    assert base.model == "chain-baseline" and {r["dataset"].split(":")[1] for r in base.rows} == {"dev", "test"}
    out = tmp_path / "res"
    args = ["structural", "--model", "glove-6b-50d", "--limit", "20", "--epochs", "2", "--control", "--threads", "1"]
    assert main([*args, "--results", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "UUAS" in printed and "chain-baseline" in printed
    df = load_results(out)
    # a setting other than the default is another task (its baseline too): it never replaces the default's rows
    assert {d.split(":")[-1] for d in df.dataset} == {"tree (2 epochs) (limit 20)"}
    model = df[df.model == "glove-6b-50d"]
    assert set(model.metric) == {"UUAS", "DSpr", "root_acc", "NSpr", "UUAS_control", "selectivity"}
    assert set(model.layer) == {"0"} and (model["lo"] <= model["hi"]).all()
    rows = {(r.dataset, r.metric): r.value for r in model.itertuples()}
    for split in ("dev", "test"):
        d = next(k[0] for k in rows if f":{split}:tree" in k[0])
        assert rows[d, "selectivity"] == pytest.approx(rows[d, "UUAS"] - rows[d, "UUAS_control"], abs=0.02)
    saved = json.loads(next(out.glob("glove-6b-50d__structural__*.json")).read_text())
    assert saved["rows"][0]["unit"] == "sentence" and saved["rows"][0]["clusters"] == 20


def test_cli_on_user_files_and_bad_heads_are_one_error_line(treebank, tmp_path, capsys):
    out = tmp_path / "res"
    files = ["--train", str(treebank), "--test", str(treebank), "--epochs", "1", "--threads", "1"]
    assert main(["structural", "--model", "glove-6b-50d", *files, "--results", str(out)]) == 0
    assert set(load_results(out).model) == {"glove-6b-50d", "chain-baseline"}
    capsys.readouterr()
    bad = tmp_path / "bad.conllu"
    bad.write_text(conllu_text().replace("\t7\tcase", "\t12\tcase", 1), encoding="utf-8")
    bad_out = tmp_path / "bad-res"
    assert (
        main(
            [
                "structural",
                "--model",
                "glove-6b-50d",
                "--train",
                str(bad),
                "--test",
                str(treebank),
                "--results",
                str(bad_out),
            ]
        )
        == 2
    )
    stderr = capsys.readouterr().err
    err = [line for line in stderr.splitlines() if line.startswith("error")]  # other lines: notes (an estimate)
    assert (
        "Traceback" not in stderr
        and len(err) == 1
        and err[0].startswith(f"error: {bad}:")
        and "HEAD '12' of 'on'" in err[0]
    ), err
    assert not bad_out.exists() or not list(bad_out.glob("*.json"))


def test_a_test_set_with_nothing_to_score_has_no_value_not_zero(treebank, tmp_path):
    """A test set of a one-word sentence and "Go !" has no scored edge: UUAS was saved as 0.00 [0.00, 0.00]."""
    tiny = tmp_path / "tiny.conllu"
    tiny.write_text(
        "1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\t_\n\n1\tGo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
        "2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t_\t_\n\n",
        encoding="utf-8",
    )
    (base,) = structural_baselines(RunContext(show_progress=False), train=str(treebank), test=str(tiny))
    (row,) = base.rows
    assert row["value"] is None and row["n"] == 0 and "nothing to score" in row["missing"]
    # a set with edges: a resample that draws none of them is left out of the interval, not counted as 0 %
    (edges,) = structural_baselines(RunContext(show_progress=False), train=str(treebank), test=str(treebank)).pop().rows
    assert 0 < edges["lo"] <= edges["value"] <= edges["hi"]


def test_a_file_without_upos_is_refused_not_scored_with_its_punctuation(tmp_path):
    """With UPOS '_' throughout no word is PUNCT: every metric silently counted punctuation (UUAS 12.89 vs 15.08)."""
    untagged = "".join(
        "\t".join(f[:3] + ["_"] + f[4:]) if len(f := line.split("\t")) == 10 else line
        for line in conllu_text().splitlines(keepends=True)
    )
    bad = tmp_path / "untagged.conllu"
    bad.write_text(untagged, encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"^{bad}: no word has a UPOS tag"):
        list(iter_trees(bad))
    partly = tmp_path / "partly.conllu"  # one tagged word is enough: the file has the column
    partly.write_text(untagged.replace("1\tThe\tthe\t_", "1\tThe\tthe\tDET", 1), encoding="utf-8")
    assert len(list(iter_trees(partly))) == 4


def test_a_test_set_of_punctuation_only_has_no_values_not_a_crash():
    """ "! ?" has no scored word: root accuracy's hits were an empty 1-D array (IndexError in ratio)."""
    (tree,) = iter_trees_text("1\t!\t!\tPUNCT\t.\t_\t0\troot\t_\t_\n2\t?\t?\tPUNCT\t.\t_\t1\tpunct\t_\t_\n\n")
    gold = GoldTrees.of([tree])
    for kind, pred in (("depth", [np.zeros(2)]), ("distance", [np.ones((2, 2))])):
        rows = structural_rows("t", "0", kind, pred, gold)
        assert [r["value"] for r in rows] == [None, None] and all("nothing to score" in r["missing"] for r in rows)


def iter_trees_text(text: str) -> list[DepTree]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.conllu"
        path.write_text(text, encoding="utf-8")
        return list(iter_trees(path))


def test_spearman_intervals_keep_every_length_in_every_resample():
    """DSpr./NSpr. average over the lengths present. Many lengths hold one or two sentences with low correlations;
    a plain resample leaves them out and drifts up (the committed intervals sat 0.13–0.5 of the way from lo to hi).
    Keeping every length in every resample (``length_interval``), each averages over the same lengths: centred."""
    rng = np.random.default_rng(0)
    k = len(LENGTHS)
    stats = np.zeros((300, 2 * k))
    length = np.r_[rng.integers(0, 10, 270), np.repeat(np.arange(10, 40), 1)]  # 30 lengths with one sentence each
    rho = np.where(length < 10, rng.normal(0.8, 0.15, 300), rng.normal(0.1, 0.15, 300))
    stats[np.arange(300), length], stats[np.arange(300), k + length] = rho, 1.0
    value = length_macro(stats.sum(0, keepdims=True))[0]

    def off_centre(lo, hi) -> float:
        return abs((lo + hi) / 2 - value) / (hi - lo)

    assert off_centre(*grouped_interval(stats, length_macro)) > 0.5  # a plain resample does not hold its estimate
    assert off_centre(*length_interval(stats)) < 0.1


def test_a_length_of_one_sentence_adds_its_variance_to_the_spearman_interval():
    """A length of n sentences resampled within itself kept (n − 1)/n of its variance, and one of a single sentence
    never varied: with EWT test's counts (14 of 45 lengths of ≤ 5 sentences) the interval covered ~80 %. Each length
    now draws its deviations from a pool of its neighbours' (≥ 20 degrees of freedom): 25 one-sentence lengths
    beside one of 40 sentences give the width of the mean's standard error, s·√(25 + 1/40) / 26, not ~1/30 of it."""
    rng = np.random.default_rng(0)
    sizes = [40] + [1] * 25  # 40 sentences of 20 words, one each of 21…45 words
    trees = [
        DepTree(tuple("w" * n), tuple(range(n)), ("_",) * n, ("NOUN",) * n)  # a chain from word 1: depth i
        for n, count in zip(range(20, 46), sizes)
        for _ in range(count)
    ]
    gold = GoldTrees.of(trees)
    pred = [gold.depths(s) + rng.normal(0, 2.0, len(t.words)) for s, t in enumerate(trees)]
    rows = structural_rows("t", "0", "depth", pred, gold)
    nspr = next(r for r in rows if r["metric"] == "NSpr")
    five = 100 * spearman_by_length(pred, gold, "depth")[:40, 15]  # the 40 20-word sentences' correlations
    se = five.std(ddof=1) * np.sqrt(25 + 1 / 40) / 26
    assert 0.9 < (nspr["hi"] - nspr["lo"]) / (2 * 1.96 * se) < 1.1
    assert (nspr["lo"] + nspr["hi"]) / 2 == pytest.approx(nspr["value"], abs=0.1 * se)


def test_strata_pool_bins_hold_enough_degrees_of_freedom():
    sizes = np.array([119, 120, 18, 24, 9, 11, 8, 13, 3, 4, 11, 7, 1, 2, 6, 1])
    bins = _pool_bins(sizes, 20)
    assert bins == [(0, 1), (1, 2), (2, 4), (4, 7), (7, 16)]  # the last 5 (12 df) join the run before
    assert bins[0][0] == 0 and bins[-1][1] == len(sizes) and all(a[1] == b[0] for a, b in zip(bins, bins[1:]))
    assert all((sizes[a:b] - 1).sum() >= 20 for a, b in bins)
    assert _pool_bins(np.array([1, 3, 1]), 20) == [(0, 3)]  # too few in all: one bin
    assert strata_mean_interval([1.0, 2.0, 3.0], [0, 1, 2]) == (None, None)  # no stratum of two: no spread to borrow
    with pytest.raises(ValueError, match="pool"):  # a bin without a residual could not draw (it crashed)
        strata_mean_interval([1.0, 2.0, 3.0, 4.0], [0, 1, 1, 2], pool=0)
