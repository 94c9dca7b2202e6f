"""The WSD probe on files: SemCor written as framework XML gives the built-in numbers; lexical-sample
TSVs and XML with own labels (held-out and k-fold); baselines; intervals; bad input on the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from corpora import wordnet
from corpora.format_errors import DataFormatError
from corpora.wsd_eval import write_wsd_files
from probes.errors import ProbeInputError
from probes.registry import RunContext
from probes.results import results_frame
from probes.stats.intervals import instances
from probes.tasks.wsd.data import eval_slice, semcor_as_wsd, semcor_slice
from probes.tasks.wsd.probe import run_wsd, wsd_baselines
from probes.tasks.wsd.sources import file_split
from probes.tasks.wsd.tables import wsd_tables
from tests.probe_helpers import RandomEmbedder
from tests.test_data_lexical_sample import semcor_lexical_lines

REPO = Path(__file__).resolve().parent.parent


def _ctx(tmp_path, **kw) -> RunContext:
    return RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "features", **kw)


def _f1(result, dataset=None) -> dict[str, tuple]:
    dataset = dataset or result.dataset
    return {
        r["layer"]: (r["value"], r["n"], r["lo"], r["hi"])
        for r in result.rows
        if r["dataset"] == dataset and r["metric"] == "F1"
    }


@pytest.fixture(scope="module")
def tsv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lexical") / "semcor-sample.tsv"
    path.write_text("\n".join(semcor_lexical_lines()) + "\n", encoding="utf-8")
    return path


def test_semcor_as_framework_xml_gives_the_builtin_numbers(tmp_path):
    from models.registry import load_embedder

    emb = load_embedder("minilm")
    train = write_wsd_files(semcor_as_wsd(30), tmp_path / "semcor.data.xml", tmp_path / "semcor.gold.key.txt")
    # The four test sets (ALL w/o SemEval-07): the built-in set whose instances are also scored per POS.
    four = [s for s in eval_slice(4) if not s.id.startswith("semeval2007.")]
    test = write_wsd_files(four, tmp_path / "all4.data.xml", tmp_path / "all4.gold.key.txt")
    builtin = run_wsd(emb, "0,6,mean", _ctx(tmp_path, limit=4), semcor_limit=30)
    files = run_wsd(emb, "0,6,mean", _ctx(tmp_path), train=str(train[0]), test=str(test[0]))
    assert builtin.dataset == "semcor→ALL" and files.dataset.startswith("semcor@") and "→all4@" in files.dataset
    assert files.extra["inventory"] == "wordnet" and files.extra["train_instances"] == builtin.extra["semcor_tokens"]
    assert _f1(files) == _f1(builtin, "ALL-noSE07") and len(_f1(files)) == 3
    for layer in ("0", "6", "mean"):  # the same per-instance outcomes, not only the same totals
        assert (instances(files, files.dataset, layer) == instances(builtin, "ALL-noSE07", layer)).all()
    by_pos = {
        r["dataset"].split(":")[-1]: (r["value"], r["n"], r["lo"], r["hi"])
        for r in files.rows
        if ":" in r["dataset"] and r["layer"] == "6"
    }
    assert len(by_pos) >= 3 and by_pos == {
        r["dataset"].split(":")[-1]: (r["value"], r["n"], r["lo"], r["hi"])
        for r in builtin.rows
        if r["dataset"].startswith("ALL-noSE07:") and r["layer"] == "6"
    }


def test_builtin_baselines_first_sense_and_mfs_in_semcor():
    first, mfs = wsd_baselines(RunContext(limit=10), semcor_limit=200)
    assert (first.model, mfs.model) == ("wordnet-1st-sense", "semcor-mfs")
    # The MFS in SemCor, computed here directly from the tagged tokens of the same SemCor slice.
    counts = Counter(k for s, sel in zip(*semcor_slice(200)) for t in sel for k in s.tokens[t].sense_keys)
    insts = [i for s in eval_slice(10) for i in s.instances]
    correct = 0
    for inst in insts:
        cands = [s.key for s in wordnet.senses(inst.lemma, inst.pos)]
        seen = [k for k in cands if counts[k]]
        pick = max(seen, key=lambda k: counts[k]) if seen else (cands[0] if cands else None)
        correct += pick in inst.gold_keys
    row = next(r for r in mfs.rows if r["dataset"] == "ALL" and r["metric"] == "R")
    assert row["value"] == round(100 * correct / len(insts), 2) and row["n"] == len(insts)
    assert row["lo"] <= row["value"] <= row["hi"]
    assert instances(mfs, "ALL", "MFS").sum() == correct


def test_lexical_sample_k_fold_with_own_labels(tmp_path, tsv):
    # Three columns: the target's inventory is that of its word form (said, says and say apart), and
    # a label names its form too (said:say.2.32.00), so that no label spans two word forms.
    lines = []
    for ln in tsv.read_text(encoding="utf-8").splitlines():
        sentence, index, label, _ = ln.split("\t")
        lines.append(f"{sentence}\t{index}\t{sentence.split()[int(index)].lower()}:{label}")
    tsv = tmp_path / "semcor-sample.tsv"
    tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    n = len(lines)
    static = RandomEmbedder(num_layers=2, dim=16)  # one vector per word form, whatever the context
    res = run_wsd(static, "0,1", _ctx(tmp_path, seed=3), train=str(tsv), folds=4)
    assert res.dataset.startswith("semcor-sample.tsv@") and res.dataset.endswith("/4-fold")
    assert res.extra["inventory"] == "labels" and res.params["folds"] == 4
    rows = {(r["layer"], r["metric"]): r for r in res.rows if r["dataset"] == res.dataset}  # the pooled rows
    for layer in ("0", "1"):  # every instance answered once: F1 = P = R = accuracy
        assert rows[(layer, "F1")]["n"] == n
        assert rows[(layer, "F1")]["value"] == rows[(layer, "P")]["value"] == rows[(layer, "R")]["value"]
        assert len(instances(res, res.dataset, layer)) == n
    # All occurrences of a word form share one vector, so every sense centroid of a target is the
    # same point: 1-NN ties, resolved towards the most frequent label = the most-frequent-label baseline.
    (mfl,) = wsd_baselines(_ctx(tmp_path, seed=3), train=str(tsv), folds=4)
    assert mfl.model == "most-frequent-label" and mfl.dataset == res.dataset
    assert (instances(mfl, res.dataset, "MFS") == instances(res, res.dataset, "0")).all()
    # Seeded folds: the same seed gives the same rows, the folds differ with the seed.
    assert run_wsd(static, "0", _ctx(tmp_path, seed=3), train=str(tsv), folds=4).rows == [
        r for r in res.rows if r["layer"] == "0"
    ]
    table = wsd_tables(results_frame([res, mfl]), [])
    assert list(table) == [f"wsd_data:{res.dataset}", f"wsd_words:{res.dataset}"]  # F1 per word form: its own
    assert len(table[f"wsd_data:{res.dataset}"]) == 3


def test_held_out_files_tsv_and_xml_with_own_labels(tmp_path, tsv):
    lines = tsv.read_text(encoding="utf-8").splitlines()
    (tmp_path / "train.tsv").write_text("\n".join(lines[::2]) + "\n", encoding="utf-8")
    (tmp_path / "test.tsv").write_text(
        "\n".join(lines[1::2] + ["A strange word .\t1\tUNSEEN"]) + "\n", encoding="utf-8"
    )
    emb = RandomEmbedder(num_layers=2, dim=16, noise=0.5, seed=1)
    res = run_wsd(emb, "1", _ctx(tmp_path), train=str(tmp_path / "train.tsv"), test=str(tmp_path / "test.tsv"))
    assert res.dataset.startswith("train.tsv@") and "→test.tsv@" in res.dataset
    f1 = next(r for r in res.rows if r["metric"] == "F1")
    assert f1["n"] == len(lines[1::2]) + 1 and f1["lo"] <= f1["value"] <= f1["hi"]
    # XML with the framework's structure but own labels: the labels inventory, scored per POS too.
    sentences = eval_slice(3)
    xml, key = write_wsd_files(sentences, tmp_path / "own.data.xml", tmp_path / "own.gold.key.txt")
    key.write_text(
        "".join(f"{i.id} {i.lemma.upper()}-{len(i.gold_keys)}\n" for s in sentences for i in s.instances),
        encoding="utf-8",
    )
    own = run_wsd(emb, "1", _ctx(tmp_path), train=str(xml), folds=2)
    assert own.extra["inventory"] == "labels"
    assert {r["dataset"] for r in own.rows} >= {own.dataset, f"{own.dataset}:NOUN", f"{own.dataset}:VERB"}


def test_dataset_names_and_feature_keys_follow_the_content(tmp_path, tsv):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    same_a, same_b = tmp_path / "a" / tsv.name, tmp_path / "b" / tsv.name
    same_a.write_bytes(tsv.read_bytes())
    same_b.write_bytes(tsv.read_bytes())
    assert file_split(same_a).feature_key == file_split(same_b).feature_key  # same content, another folder
    same_b.write_bytes(tsv.read_bytes().replace(b"\t", b" \t", 1))
    assert file_split(same_a).name != file_split(same_b).name
    assert file_split(same_a, limit=5).feature_key.endswith("-limit5")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"train": "T"}, "needs --test FILE"),
        ({"train": "T", "folds": 1}, "at least 2 folds"),
        ({"train": "T", "test": "T", "folds": 3}, "give --train FILE and no --test"),
        ({"test_keys": "K"}, "--test-keys needs --test"),
        ({"train": "T", "folds": 2, "semcor_limit": 5}, "--semcor-limit applies"),
        ({"train": "missing.tsv", "folds": 2}, "no such file"),
        ({"format": "tsv"}, "--format applies to --train / --test files"),
        ({"train": "T", "folds": 2, "format": "csv"}, "--format 'csv': choose from xml, tsv"),
    ],
)
def test_bad_requests(tmp_path, tsv, options, message):
    options = {k: (str(tsv) if v == "T" else v) for k, v in options.items()}
    with pytest.raises(ProbeInputError, match=message):
        run_wsd(RandomEmbedder(), "0", _ctx(tmp_path), **options)


def test_xml_without_gold_keys_and_own_labels_from_semcor(tmp_path):
    xml, key = write_wsd_files(eval_slice(2), tmp_path / "x.data.xml", tmp_path / "x.gold.key.txt")
    key.unlink()
    with pytest.raises(DataFormatError, match=r"x\.data\.xml: XML without gold keys: no key file x\.gold\.key\.txt"):
        run_wsd(RandomEmbedder(), "0", _ctx(tmp_path), test=str(xml))
    # a key file named but not there is that option's error (it said "no key file … beside it; give one with
    # --test-keys", to a user who had)
    with pytest.raises(ProbeInputError, match=r"^--test-keys .*nokeys\.txt: no such file\.$"):
        run_wsd(RandomEmbedder(), "0", _ctx(tmp_path), test=str(xml), test_keys=str(tmp_path / "nokeys.txt"))
    key.write_text("".join(f"{i.id} OWN\n" for s in eval_slice(2) for i in s.instances), encoding="utf-8")
    with pytest.raises(ProbeInputError, match="SemCor cannot train for it"):
        run_wsd(RandomEmbedder(), "0", _ctx(tmp_path, limit=2), test=str(xml))


def test_cli_bad_file_is_one_error_line_and_nothing_is_written(tmp_path, tsv):
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(tsv.read_bytes() + b"the bank\t7\tX\n")
    out = tmp_path / "results"
    cmd = [
        sys.executable,
        "-m",
        "probes",
        "wsd",
        "--model",
        "glove-6b-50d",
        "--train",
        str(bad),
        "--folds",
        "3",
        "--results",
        str(out),
    ]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    n = len(tsv.read_text(encoding="utf-8").splitlines())
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"error: {bad}:{n + 1}: target word index 7 is out of range: the sentence has 2 words (indices 0..1)"
    ]
    assert not list(out.glob("*.json"))


def test_lexical_sample_with_wordnet_keys_and_pos_uses_wordnet(tmp_path, tsv):
    # Senseval's lemma naming (man.n, say.v) gives the POS, and the labels are real SemCor sense keys.
    sentences, selected = semcor_slice(300)
    lines = []
    for ln in tsv.read_text(encoding="utf-8").splitlines():
        sentence, index, _label, lemma = ln.split("\t")
        lines.append((sentence, index, lemma))
    keys = [
        tok.sense_keys[0]
        for s, sel in zip(sentences, selected)
        for t in sel
        for tok in [s.tokens[t]]
        if (tok.lemma or "").lower() in {"man", "time", "year", "say", "make"} and len(tok.pieces) == 1
    ]
    assert len(keys) == len(lines)
    letters = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "s"}
    rows = [f"{s}\t{i}\t{k}\t{lem}.{letters[k.split('%')[1][0]]}" for (s, i, lem), k in zip(lines, keys)]
    (tmp_path / "wn-train.tsv").write_text("\n".join(rows[::2]) + "\n", encoding="utf-8")
    (tmp_path / "wn-test.tsv").write_text("\n".join(rows[1::2]) + "\n", encoding="utf-8")
    opts = {"train": str(tmp_path / "wn-train.tsv"), "test": str(tmp_path / "wn-test.tsv")}
    res = run_wsd(RandomEmbedder(num_layers=1, dim=8, noise=0.3), "0", _ctx(tmp_path), **opts)
    assert res.extra["inventory"] == "wordnet"
    first, mfl = wsd_baselines(_ctx(tmp_path), **opts)
    assert (first.model, mfl.model) == ("wordnet-1st-sense", "most-frequent-label")
    test_rows = [r.split("\t") for r in rows[1::2]]
    upos = {"n": "NOUN", "v": "VERB", "a": "ADJ", "r": "ADV", "s": "ADJ"}
    expected = [
        wordnet.first_sense_key(lem.rsplit(".", 1)[0], upos[lem.rsplit(".", 1)[1]]) == k for _, _, k, lem in test_rows
    ]
    assert list(instances(first, first.dataset, "first-sense")) == expected
    assert {r["dataset"] for r in res.rows} >= {res.dataset, f"{res.dataset}:NOUN", f"{res.dataset}:VERB"}


def test_training_labels_meet_the_test_targets_across_tag_sets_and_a_missing_suffix():
    """A Penn tag in the test file (NN) never met NOUN in training, and one test line without a ``.n`` suffix
    turned every target of its file into "bank.n" with no POS: each fell back to the most frequent label."""
    from probes.tasks.wsd.inventory import LABELS, Inventory

    train = [("bank", "NOUN"), ("bank", "NOUN"), ("plant", "NOUN")]
    golds = [["MONEY"], ["MONEY"], ["FLORA"]]
    inv = Inventory.build(LABELS, train, golds, [("bank", "NN"), ("plant", "n")])
    assert inv.senses("bank", "NN") == ("MONEY",) and inv.senses("plant", "n") == ("FLORA",)
    inv = Inventory.build(LABELS, train, golds, [("bank", "NOUN"), ("plant", "")])  # one target without a POS
    assert inv.senses("bank", "NOUN") == ("MONEY",) and inv.senses("plant", "") == ("FLORA",)
    assert Inventory.build(LABELS, train, golds, [("bank", "VERB")]).senses("bank", "VERB") == ()
