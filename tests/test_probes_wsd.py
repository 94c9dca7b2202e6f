"""WSD probe: framework scorer vs Scorer.java, the first-sense baseline, the vectorised 1-NN."""

from __future__ import annotations

import random
import re
import shutil
import subprocess

import numpy as np
import pytest

from probes.errors import ProbeInputError
from probes.registry import RunContext
from probes.tasks.wsd import (
    NearestSenseWSD,
    build_layout,
    eval_word_pieces,
    first_sense_predictions,
    run_first_sense,
    run_wsd,
    score,
    write_key_file,
)
from tests.probe_helpers import RandomEmbedder


@pytest.fixture(scope="module")
def all_set():
    from corpora.wsd_eval import load_wsd_dataset

    return load_wsd_dataset("ALL").instances


@pytest.fixture(scope="module")
def java_scorer(tmp_path_factory, data_root):
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK on this machine")
    out = tmp_path_factory.mktemp("scorer")
    subprocess.run(["javac", "-d", str(out), str(data_root / "wsd_eval" / "Scorer.java")], check=True)

    def run(gold, system) -> dict[str, float]:
        res = subprocess.run(
            ["java", "-cp", str(out), "Scorer", str(gold), str(system)], capture_output=True, text=True, check=True
        )
        return {k: float(v) for k, v in re.findall(r"(P|R|F1)=\s*([\d.]+)%", res.stdout)}

    return run


def _ours(preds, instances):
    sc = score(preds, [i.gold_keys for i in instances])
    return {k: round(sc[k], 1) for k in ("P", "R", "F1")}


def test_scorer_agrees_with_scorer_java(all_set, java_scorer, data_root, tmp_path):
    gold = data_root / "wsd_eval" / "ALL" / "ALL.gold.key.txt"
    ids = [i.id for i in all_set]
    rng = random.Random(0)
    from corpora.wordnet import senses

    outputs = {
        "first_sense": first_sense_predictions([i.lemma for i in all_set], [i.pos for i in all_set]),
        "random_sense": [rng.choice([s.key for s in senses(i.lemma, i.pos)] or [None]) for i in all_set],
    }
    # Leave a third unanswered so that precision and recall differ.
    outputs["partial"] = [p if k % 3 else None for k, p in enumerate(outputs["first_sense"])]
    for name, preds in outputs.items():
        path = write_key_file(tmp_path / f"{name}.key", ids, preds)
        java = java_scorer(gold, path)
        assert _ours(preds, all_set) == java, name
    assert java_scorer(gold, tmp_path / "partial.key")["P"] > java_scorer(gold, tmp_path / "partial.key")["R"]


def test_first_sense_baseline_matches_the_framework_paper():
    # Raganato et al. (2017), Table 4, "MFS (WordNet first sense)": 66.8 66.2 55.2 63.0 67.8 65.2.
    res = run_first_sense()
    f1 = {r["dataset"]: round(r["value"], 1) for r in res.rows if r["metric"] == "F1" and ":" not in r["dataset"]}
    assert f1 == {
        "senseval2": 66.8,
        "senseval3": 66.2,
        "semeval2007": 55.2,
        "semeval2013": 63.0,
        "semeval2015": 67.8,
        "ALL": 65.2,
        # Peters et al. (2018) Table 5: "WordNet 1st Sense Baseline 65.9" = the four test sets.
        "ALL-noSE07": 65.9,
    }
    # Per POS on the paper's set, not on ALL: SemEval-07 (455 instances) picks layers and is not scored per POS.
    by_pos = {r["dataset"]: r["n"] for r in res.rows if r["dataset"].startswith("ALL-noSE07:")}
    assert sum(by_pos.values()) == 7253 - 455 and not any(r["dataset"].startswith("ALL:") for r in res.rows)
    # Restating reads each per-POS row's outcomes back from its split's kept ones: today's rows come out unchanged.
    from probes.reporting.restate import builtin_subsets, restate

    assert restate(res, builtin_subsets()).rows == res.rows


def test_vectorised_predict_equals_a_plain_loop():
    rng = np.random.default_rng(0)
    inventory = {
        ("bank", "NOUN"): ["bank%1", "bank%2", "bank%3"],
        ("play", "VERB"): ["play%1", "play%2"],
        ("rare", "ADJ"): ["rare%1"],
        ("zzz", "NOUN"): [],
    }
    first = {k: (v[0] if v else None) for k, v in inventory.items()}
    keys = [["bank%1"], ["bank%2"], ["bank%2", "play%1"], ["play%2"], ["other%1"]] * 20
    X = rng.standard_normal((len(keys), 8)).astype(np.float32)
    wsd = NearestSenseWSD(
        senses_fn=lambda lemma, p: inventory[(lemma, p)],
        first_sense_fn=lambda lemma, p: first[(lemma, p)],
        device="cpu",
        batch_size=7,
    ).fit(X, keys)
    lemmas = ["bank", "play", "rare", "zzz"] * 25
    poses = ["NOUN", "VERB", "ADJ", "NOUN"] * 25
    Xq = rng.standard_normal((100, 8)).astype(np.float32)
    got = wsd.predict(Xq, lemmas, poses)
    # Reference: explicit centroids, one instance at a time.
    cent = {}
    for k in {k for ks in keys for k in ks}:
        rows = [i for i, ks in enumerate(keys) if k in ks]
        c = X[rows].mean(0)
        cent[k] = c / np.linalg.norm(c)
    for q, lemma, p, g in zip(Xq, lemmas, poses, got):
        seen = [k for k in inventory[(lemma, p)] if k in cent]
        if not seen:
            assert g == first[(lemma, p)]  # MFS backoff: "rare%1" unseen -> first sense; "zzz" -> None
            continue
        sims = [float(cent[k] @ q) / np.linalg.norm(q) for k in seen]
        assert g == seen[int(np.argmax(sims))]
    assert got[2] == "rare%1" and got[3] is None
    assert "bank%3" not in set(got)  # never seen in training: never predicted by 1-NN


def test_exact_ties_go_to_the_earlier_wordnet_sense():
    # A static model: every occurrence of "bank" has the same vector, so both senses get the same
    # centroid (up to rounding of different sums); the tie must go to WordNet's earlier sense.
    v = np.random.default_rng(1).standard_normal(16).astype(np.float16).astype(np.float32)
    keys = [["bank%2"]] * 7 + [["bank%1"]] * 3
    inv = {("bank", "NOUN"): ["bank%1", "bank%2"]}
    wsd = NearestSenseWSD(
        senses_fn=lambda lemma, p: inv[(lemma, p)], first_sense_fn=lambda lemma, p: None, device="cpu"
    ).fit(np.tile(v, (10, 1)), keys)
    assert wsd.predict(v[None], ["bank"], ["NOUN"]) == ["bank%1"]


def test_layout_means_multiword_pieces():
    sents = [[["Fulton", "County"], ["said"]], [["prime", "minister"], ["x"]]]
    lay = build_layout(sents, [[0, 1], [0]])
    assert lay.sentences == [["Fulton", "County", "said"], ["prime", "minister", "x"]]
    layer = np.arange(12, dtype=np.float32).reshape(6, 2)
    np.testing.assert_allclose(lay.token_vectors(layer), [[1, 2], [4, 5], [7, 8]])
    assert eval_word_pieces("change-ringing") == ["change-ringing"]
    assert eval_word_pieces("prime minister") == ["prime", "minister"]


def test_random_vectors_lose_to_first_sense_and_glove_does_not_break(tmp_path):
    # Pure per-occurrence noise: 1-NN picks an arbitrary seen sense, far below WordNet's first sense.
    noise = RandomEmbedder(num_layers=2, dim=32, noise=1.0, seed=3, version="noise")
    noise._word_vec = lambda w: np.zeros((2, 32), np.float32)  # only the noise remains
    res = run_wsd(
        noise,
        "0,mean",
        RunContext(limit=15, device="cpu", show_progress=False, feature_root=tmp_path),
        semcor_limit=1500,
    )
    f1 = {(r["dataset"], r["layer"]): r["value"] for r in res.rows if r["metric"] == "F1"}
    mfs = {r["dataset"]: r["value"] for r in run_first_sense(limit=15).rows if r["metric"] == "F1"}
    n = {r["dataset"]: r["n"] for r in res.rows if r["metric"] == "F1" and r["layer"] == "0"}
    assert (
        res.extra["eval_instances"]
        == n["ALL"]
        > n["ALL-noSE07"]
        == sum(v for k, v in n.items() if k.startswith("ALL-noSE07:"))
    )
    assert 15 < f1[("ALL", "0")] < mfs["ALL"] - 5
    assert 15 < f1[("ALL", "mean")] < mfs["ALL"] - 5


def test_empty_slices_are_clear_errors(tmp_path):
    with pytest.raises(ProbeInputError, match="limit"):
        run_wsd(RandomEmbedder(), "0", RunContext(limit=0, feature_root=tmp_path))
    with pytest.raises(ProbeInputError, match="semcor-limit"):
        run_wsd(RandomEmbedder(), "0", RunContext(feature_root=tmp_path), semcor_limit=-1)
    with pytest.raises(ValueError):
        score(["a"], [])
    assert score([], [])["F1"] == 0.0
