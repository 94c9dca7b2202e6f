"""Attention-head syntax: hand-made attention that points at the gold head scores 100, one that points at the
next word scores what the +1 offset baseline scores; MiniLM on UD EWT dev gives every row; a model without
attention is one clear error."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest

from corpora.conllu import DepTree, iter_trees
from probes.__main__ import main
from probes.estimators.head_syntax import ALL, OFFSETS, HeadCounts, arcs
from probes.results import load_results
from probes.tasks.head_syntax import best_heads

TREES = [
    DepTree(("The", "dog", "barked"), (2, 3, 0), ("det", "nsubj", "root"), ("DET", "NOUN", "VERB")),
    DepTree(
        ("I", "saw", "the", "big", "cat"),
        (2, 0, 5, 5, 2),
        ("nsubj", "root", "det", "amod", "obj"),
        ("PRON", "VERB", "DET", "ADJ", "NOUN"),
    ),
    DepTree(("in", "nmod:poss", "x"), (3, 3, 0), ("case", "nmod:poss", "root"), ("ADP", "NOUN", "NOUN")),
]


def attention(tree: DepTree) -> np.ndarray:
    """(1 layer, 3 heads, n, n): head 0 attends to each word's gold head (the root to itself), head 1 to the
    next word (the last to itself), head 2 uniformly (argmax: the first word other than itself)."""
    n = len(tree.words)
    att = np.zeros((1, 3, n, n), np.float32)
    for i, h in enumerate(tree.heads):
        att[0, 0, i, h - 1 if h else i] = 1
        att[0, 1, i, min(i + 1, n - 1)] = 1
    att[0, 2] = 1 / n
    return att


def test_hand_made_heads_against_the_offsets():
    counts = HeadCounts(1, 3)
    for tree in TREES:
        counts.add(attention(tree), tree)
    # dependencies (non-root arcs): 2 + 4 + 2
    assert sum(counts.total[ALL]) == 8 and sum(counts.total["det"]) == 2 and "nmod" in counts.total
    dep_head = counts.accuracy("dep->head", ALL)[0]
    assert dep_head[0] == 100.0  # the gold-head head
    offsets = dict(zip(OFFSETS, counts.offset_accuracy("dep->head", ALL)))
    assert dep_head[1] == offsets[1]  # the next-word head is the +1 offset
    # by hand: the head is the next word for The->dog, dog->barked, I->saw, big->cat, nmod:poss->x = 5 of 8
    assert offsets[1] == pytest.approx(100 * 5 / 8)
    assert offsets[2] == pytest.approx(100 * 2 / 8)  # the->cat, in->x
    # both directions predict the dependent's head: one fixed-offset baseline for both
    assert counts.offset_accuracy("head->dep", ALL).tolist() == counts.offset_accuracy("dep->head", ALL).tolist()
    assert offsets[-3] == pytest.approx(100 / 8) and offsets[3] == 0.0  # cat->saw: offsets reach three words
    # The->dog yes, the->cat no; the uniform head's tie goes to the first word other than itself (The->dog)
    assert counts.accuracy("dep->head", "det")[0].tolist() == [100.0, 50.0, 50.0]
    row = counts.head_row("d", "dep->head", "det", 0, 0)
    assert (row["value"], row["n"], row["clusters"], row["unit"], row["layer"]) == (100.0, 2, 2, "sentence", "1")
    base = counts.offset_row("d", "dep->head", ALL)
    assert base["offset"] == 1 and base["value"] == pytest.approx(62.5) and base["lo"] <= base["value"] <= base["hi"]


def test_a_word_attending_to_itself_predicts_the_other_word_it_attends_to_most():
    """Clark et al. leave a word's attention to itself out of its prediction (it cannot be its own head): a
    head whose largest weight is the diagonal and next largest the gold head is right. It counted as wrong."""
    counts = HeadCounts(1, 1)
    for tree in TREES:
        n = len(tree.words)
        att = np.full((1, 1, n, n), 0.1 / n, np.float32)
        for i, h in enumerate(tree.heads):
            att[0, 0, i, i] = 0.6
            if h:
                att[0, 0, i, h - 1] = 0.3
        counts.add(att, tree)
    assert counts.accuracy("dep->head", ALL)[0, 0] == 100.0


def test_head_to_dependent_asks_which_word_attends_to_each_dependent_most():
    """head->dep as Clark et al.'s ``mode="transpose"``: for each dependent, the word attending to it most. A
    head whose row spreads evenly over its dependents gets all of them (read from the head's row, a head with
    two dependents could get only one: "saw" has I and cat, "cat" has the and big)."""
    counts = HeadCounts(1, 1)
    for tree in TREES:
        n = len(tree.words)
        att = np.full((1, 1, n, n), 0.01, np.float32)
        for i, h in enumerate(tree.heads):
            if h:
                att[0, 0, h - 1, i] = 1.0
        counts.add(att, tree)
    assert counts.accuracy("head->dep", ALL)[0, 0] == 100.0


def test_a_word_that_attends_only_to_itself_predicts_nothing():
    """A decoder's first word can attend only to itself: with itself left out its row is all zeros, whose argmax
    (the next word) is often its head ("The" -> "dog"). That is no prediction, so it is not counted right."""
    counts = HeadCounts(1, 1)
    tree = TREES[0]  # The <- dog <- barked: both dependents' heads are the next word
    n = len(tree.words)
    causal = np.tril(np.ones((n, n), np.float32))[None, None]  # each word attends to itself and the words before
    counts.add(causal / causal.sum(-1, keepdims=True), tree)
    assert counts.accuracy("dep->head", ALL)[0, 0] == 0.0  # nothing to the right is ever attended
    # head->dep: "dog" is attended most (ties: first) by "barked", its head; "The" by "dog", its head
    assert counts.accuracy("head->dep", ALL)[0, 0] == 100.0


def test_heads_chosen_on_another_treebank_are_scored_on_the_test_one():
    """--select: the head (and offset) with the best accuracy on the selection counts is reported with its
    accuracy on the scored counts, not the scored counts' own maximum."""
    scored, chooser = HeadCounts(1, 3), HeadCounts(1, 3)
    for tree in TREES:
        scored.add(attention(tree), tree)
        swapped = attention(tree)[:, [1, 0, 2]]  # on the selection data head 1 is the gold-head head
        chooser.add(swapped, tree)
        # and the +2 offset is made the best offset there by a tree whose heads are two words right
    on_itself = best_heads(scored, [ALL])["dep->head"][ALL]
    held_out = best_heads(scored, [ALL], chooser)["dep->head"][ALL]
    assert (on_itself["head"], on_itself["accuracy"]) == (0, 100.0)
    assert held_out["head"] == 1 and held_out["accuracy"] == pytest.approx(100 * 5 / 8)  # head 1 on the scored set
    assert held_out["beats_offset"] is False  # 62.5, tied with the +1 offset chosen on the same trees
    row = scored.offset_row("d", "dep->head", ALL, chooser=chooser)
    assert row["offset"] == 1 and row["value"] == pytest.approx(62.5)


def test_arcs_use_base_relations(data_root):
    tree = next(iter_trees(data_root / "ud_english_ewt" / "en_ewt-ud-dev.conllu"))
    dep, head, rels = arcs(tree)
    assert len(dep) == len(tree.words) - 1 and all(":" not in r for r in rels)
    assert all(tree.heads[d] == h + 1 for d, h in zip(dep, head))


def test_minilm_on_ewt_dev_and_a_model_without_attention(tmp_path, capsys, data_root):
    out = tmp_path / "res"
    assert main(["head_syntax", "--model", "minilm", "--limit", "12", "--min-count", "5", "--results", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "best head (layer.head)" in printed
    df = load_results(out)
    model, base = df[df.model == "minilm"], df[df.model == "offset-baseline"]
    assert set(model.layer) == {str(k) for k in range(1, 7)}  # MiniLM: 6 attention layers
    assert set(base.layer) == {"baseline"} and set(base.dataset) == set(model.dataset)
    assert any(":dep->head:det" in d for d in model.dataset) and any(":head->dep:all" in d for d in model.dataset)
    trees = list(islice(iter_trees(data_root / "ud_english_ewt" / "en_ewt-ud-dev.conllu"), 12))
    all_n = sum(len(arcs(t)[0]) for t in trees)
    assert set(model[model.dataset.str.contains(":dep->head:all")]["n"]) == {all_n}
    ewt = data_root / "ud_english_ewt"
    held = tmp_path / "held"
    argv = ["head_syntax", "--model", "minilm", "--limit", "12", "--min-count", "5", "--results", str(held)]
    assert (
        main([*argv, "--test", str(ewt / "en_ewt-ud-test.conllu"), "--select", str(ewt / "en_ewt-ud-dev.conllu")]) == 0
    )
    held_df = load_results(held)
    assert set(held_df.model) == {"minilm", "offset-baseline"}
    assert not set(held_df.dataset) & set(df.dataset)  # held-out rows never share a cell with same-data rows
    assert main(["head_syntax", "--model", "glove-6b-50d", "--limit", "5", "--results", str(tmp_path / "g")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(err) == 1 and "has no attention" in err[0]


def test_reproduce_skips_a_model_without_attention_and_names_the_flag_of_the_selection_file(tmp_path, capsys):
    """``reproduce --probes head_syntax`` on the zoo ran the baselines, then stopped at its first static model
    ("has no attention", exit 2) where a model with too few layers for a probe is skipped with a note; and a
    missing ``--select`` file was called ``--train``, a flag head_syntax does not have."""
    argv = ["reproduce", "--probes", "head_syntax", "--models", "glove-6b-50d", "--limit", "20", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "(skipped head_syntax: glove-6b-50d has no attention: the head_syntax probe needs a transformer.)" in (
        capsys.readouterr().out
    )
    assert main(["head_syntax", "--model", "gpt-small", "--select", str(tmp_path / "nowhere.conllu")]) == 2
    assert capsys.readouterr().err.startswith(f"error: --select {tmp_path / 'nowhere.conllu'}")
