"""The ``tag`` probe on files: CoNLL-2000 as a column file gives the built-in POS numbers; UD EWT slices;
BIO span F1 equals seqeval's; datasets never mix; bad input is one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import islice
from pathlib import Path

import numpy as np
import pytest
import torch
from seqeval.metrics import f1_score

from corpora.conllu import iter_conllu
from corpora.format_errors import DataFormatError
from models.registry import load_embedder
from probes.errors import ProbeInputError
from probes.estimators.bio import span_f1_row
from probes.estimators.classifier import EARLY_STOP
from probes.registry import RunContext, get_probe
from probes.tasks.conll import conll_slice
from probes.tasks.tag import run_tag, tag_baselines
from tests.probe_helpers import RandomEmbedder

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"


def conll_column_file(path: Path, split: str, limit: int) -> Path:
    """CoNLL-2000 sentences written back in their own column format: word POS chunk."""
    path.write_text(
        "".join(
            "".join(f"{w} {p} {c}\n" for w, p, c in zip(s.words, s.pos, s.chunks)) + "\n"
            for s in conll_slice(split, limit)
        )
    )
    return path


def ewt_slice(data_root: Path, tmp_path: Path, split: str, n: int) -> Path:
    """The first ``n`` sentences of a UD EWT file, copied verbatim (comments, multiword tokens)."""
    src = data_root / "ud_english_ewt" / f"en_ewt-ud-{split}.conllu"
    out, blanks = [], 0
    with open(src, encoding="utf-8") as fh:
        for line in fh:
            out.append(line)
            blanks += not line.strip()
            if blanks == n:
                break
    path = tmp_path / f"ewt-{split}.conllu"
    path.write_text("".join(out), encoding="utf-8")
    return path


def _rows(rows) -> set[tuple]:
    return {(r["dataset"], str(r["layer"]), r["metric"], r["value"], r.get("n")) for r in rows}


def test_conll2000_as_a_column_file_gives_the_builtin_pos_numbers(tmp_path):
    """The issue's check: the generic path on CoNLL-2000 written out = the built-in POS probe, per layer
    (the pre-refactor golden file of `pos --limit 80`, minilm, 2 threads)."""
    torch.set_num_threads(2)
    train = conll_column_file(tmp_path / "train.txt", "train", 80)
    test = conll_column_file(tmp_path / "test.txt", "test", 80)
    golden = json.loads(next(GOLDEN.glob("minilm__pos__*.json")).read_text())
    ctx = RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "features")
    # The golden file's schedule (the early stop; the plateau schedule is the default since 2026-12-07)
    res = run_tag(load_embedder("minilm"), None, ctx, train=str(train), test=str(test), column="1", schedule=EARLY_STOP)
    ours = {(r["layer"], r["value"], r["n"]) for r in res.rows}
    assert ours == {(r["layer"], r["value"], r["n"]) for r in golden["rows"]}
    assert res.rows[0]["dataset"] == f"{res.dataset}:test:col1" and res.dataset.startswith(
        "test@"
    )  # "train", "test": no common name
    assert res.extra["labels"]["NN"] > 100 and all(r["lo"] <= r["value"] <= r["hi"] for r in res.rows)
    (base,) = tag_baselines(ctx, train=str(train), test=str(test), column="1")
    majority = json.loads(next(GOLDEN.glob("majority-tag__pos__*.json")).read_text())
    assert [r["value"] for r in base.rows] == [r["value"] for r in majority["rows"]] == [68.12]


def test_bio_chunks_are_scored_as_spans_like_seqeval(tmp_path):
    train = conll_column_file(tmp_path / "train.txt", "train", 60)
    test = conll_column_file(tmp_path / "test.txt", "test", 60)
    typed = RandomEmbedder(num_layers=2, dim=32, seed=3, version="typed")
    ctx = RunContext(device="cpu", show_progress=False, feature_root=tmp_path)
    res = run_tag(typed, "1", ctx, train=str(train), test=str(test), column="-1", scheme="bio")
    acc, f1 = res.rows
    assert (acc["metric"], f1["metric"]) == ("accuracy", "F1") and f1["dataset"].endswith(":test:col-1")
    assert 0 < f1["value"] < acc["value"] < 100 and f1["lo"] < f1["value"] < f1["hi"]
    # The span F1 itself, on real gold chunks and corrupted predictions, equals seqeval's (conlleval) F1.
    gold = [list(s.chunks) for s in conll_slice("test", 60)]
    rng = np.random.default_rng(0)
    pred = [[("O" if rng.random() < 0.2 else t) for t in s] for s in gold]
    assert span_f1_row("x", "0", gold, pred)["value"] == round(100 * f1_score(gold, pred), 2)
    with pytest.raises(DataFormatError, match=r"train\.txt:1: label 'NN' in this sentence is not a BIO tag"):
        run_tag(typed, "1", ctx, train=str(train), test=str(test), column="1", scheme="bio")


def test_ud_ewt_slice_upos_and_a_feats_key(data_root, tmp_path):
    train, test = ewt_slice(data_root, tmp_path, "train", 60), ewt_slice(data_root, tmp_path, "test", 40)
    typed = RandomEmbedder(num_layers=2, dim=48, seed=1, version="typed")
    ctx = RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "f")
    upos = run_tag(typed, "0,mean", ctx, train=str(train), test=str(test), column="UPOS", name="ewt")
    n_test = sum(len(s.words) for s in iter_conllu(test, "UPOS"))
    assert [(r["layer"], r["n"]) for r in upos.rows] == [("0", n_test), ("mean", n_test)]
    assert upos.dataset.startswith("ewt@") and upos.rows[0]["dataset"].endswith(":test:UPOS")
    (base,) = tag_baselines(ctx, train=str(train), test=str(test), column="UPOS", name="ewt")
    assert 50 < base.rows[0]["value"] < 95
    number = run_tag(
        typed, "0", ctx, train=str(train), test=str(test), column="feats:Number", skip_label="_", name="ewt"
    )
    with_number = sum(t != "_" for s in iter_conllu(test, "feats:Number") for t in s.labels)
    assert number.rows[0]["n"] == with_number < n_test and {"Sing", "Plur"} <= set(number.extra["labels"])
    assert "_" not in number.extra["labels"]
    assert number.rows[0]["dataset"].endswith(":test:feats:Number (not _)")


def test_two_datasets_with_the_same_file_names_never_mix(data_root, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    ta, tb = ewt_slice(data_root, a, "train", 20), ewt_slice(data_root, b, "train", 21)
    ctx = RunContext(limit=None)
    (ra,), (rb,) = tag_baselines(ctx, train=str(ta), test=str(ta)), tag_baselines(ctx, train=str(tb), test=str(tb))
    assert ra.dataset.split("@")[0] == rb.dataset.split("@")[0] == "ewt-train"
    assert ra.dataset != rb.dataset and ra.rows[0]["dataset"] != rb.rows[0]["dataset"]


def test_bad_requests_are_one_clear_error(data_root, tmp_path):
    ewt = ewt_slice(data_root, tmp_path, "dev", 5)
    ctx = RunContext(limit=5)
    with pytest.raises(ProbeInputError, match="give --train FILE and --test FILE"):
        tag_baselines(ctx, test=str(ewt))
    with pytest.raises(ProbeInputError, match="no such file"):
        tag_baselines(ctx, train=str(tmp_path / "nope.conllu"), test=str(ewt))
    with pytest.raises(ProbeInputError, match=r"--train .*: is a folder; give a file"):  # was "no such file"
        tag_baselines(ctx, train=str(tmp_path), test=str(ewt))
    with pytest.raises(DataFormatError, match="no label column 'HEADS'"):
        tag_baselines(ctx, train=str(ewt), test=str(ewt), column="HEADS")
    with pytest.raises(ProbeInputError, match="field index"):
        tag_baselines(ctx, train=str(ewt), test=str(ewt), format="columns", column="UPOS")
    with pytest.raises(ProbeInputError, match="--scheme 'iob'"):
        get_probe("tag").options_from({"scheme": "iob"})
    # a --skip-label no word has skipped nothing, under a task named "feats:Number (not -)"
    with pytest.raises(ProbeInputError, match=r"--skip-label '-': no word of the files has that label.*'_'"):
        tag_baselines(ctx, train=str(ewt), test=str(ewt), column="feats:Number", skip_label="-")
    # test labels the training file never has (another case): every probe scored 0.00 [0.00, 0.00], said nowhere
    lower = tmp_path / "lower.conllu"
    lines = [line.split("\t") for line in ewt.read_text(encoding="utf-8").splitlines()]
    lower.write_text(
        "\n".join("\t".join(f[:3] + [f[3].lower()] + f[4:]) if len(f) == 10 else f[0] for f in lines) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ProbeInputError, match=r"labels \(.*\) never occur in the training.*'noun' \(train: 'NOUN'\)"):
        tag_baselines(ctx, train=str(ewt), test=str(lower))


def test_cli_runs_the_tag_probe_and_a_bad_file_writes_nothing(data_root, tmp_path):
    train, test = ewt_slice(data_root, tmp_path, "train", 30), ewt_slice(data_root, tmp_path, "test", 20)
    bad = tmp_path / "bad.conllu"
    bad.write_text(test.read_text().replace("\tPROPN\t", "\t", 1))
    base = [sys.executable, "-m", "probes", "tag", "--model", "glove-6b-50d", "--train", str(train)]
    out = subprocess.run(
        base + ["--test", str(bad), "--results", str(tmp_path / "bad-res")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"error: {bad}:") and "expected 10 tab-separated fields" in out.stderr
    assert not list((tmp_path / "bad-res").glob("*.json"))
    res_dir = tmp_path / "res"
    out = subprocess.run(
        base + ["--test", str(test), "--column", "XPOS", "--results", str(res_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "EMBPROBE_CACHE": str(tmp_path / "cache")},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    files = sorted(res_dir.glob("*.json"))
    assert [f.name.split("__")[:2] for f in files] == [["glove-6b-50d", "tag"], ["majority-label", "tag"]]
    model = json.loads(files[0].read_text())
    assert model["rows"][0]["dataset"] == f"{model['dataset']}:test:XPOS" and "--column XPOS" in model["command"]
    assert model["params"]["test"] == str(test) and model["extra"]["task"] == "XPOS"
    first = list(islice(iter_conllu(test, "XPOS"), 20))
    assert model["rows"][0]["n"] == sum(len(s.words) for s in first)


def test_cli_summary_of_a_one_sentence_test_set_says_it_has_no_interval(data_root, tmp_path):
    """One test sentence: resampling it cannot vary the score, so its row has no interval; the command's summary
    tried to format the missing bounds and ended in a traceback after saving (found with the docs' example files)."""
    train, test = ewt_slice(data_root, tmp_path, "train", 30), ewt_slice(data_root, tmp_path, "test", 1)
    out = subprocess.run(
        [sys.executable, "-m", "probes", "tag", "--model", "glove-6b-50d", "--train", str(train), "--test", str(test)]
        + ["--results", str(tmp_path / "res")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "EMBPROBE_CACHE": str(tmp_path / "cache")},
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    header, row = out.stdout.splitlines()[-3:-1]
    assert "95% interval" in header and " n/a " in row and row.split()[-2:] == ["sentence", "1"], out.stdout


def test_a_probe_on_an_upload_sized_file_is_trained_not_left_under_the_majority(data_root, tmp_path):
    """60 EWT sentences tagged punctuation or word (1,460 tokens): with 2,048-token batches the probe took one Adam
    step an epoch and scored 61.27, far under always saying "word" (87 %); it now takes ≥ 16 steps an epoch."""
    lines = []
    for line in ewt_slice(data_root, tmp_path, "dev", 60).read_text(encoding="utf-8").splitlines():
        f = line.split("\t")
        if len(f) == 10 and f[0].isdigit():
            f[3] = "P" if f[3] == "PUNCT" else "W"
        lines.append("\t".join(f))
    easy = tmp_path / "easy.conllu"
    easy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ctx = RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "f")
    result = run_tag(load_embedder("glove-6b-50d"), "0", ctx, train=str(easy), test=str(easy), name="easy")
    labels = [t for s in iter_conllu(easy, "UPOS") for t in s.labels]
    always_word = 100 * labels.count("W") / len(labels)
    assert 80 < always_word < 90 and result.rows[0]["value"] > always_word + 5, (always_word, result.rows[0])


def test_a_run_reads_each_file_once_and_again_when_it_changes(data_root, tmp_path, monkeypatch):
    """``run_probe`` reads the files before the model loads, then runs: one read of each file per run (UD EWT's
    trees took ~2 s a read, three times a run). Another label column is another read (not the cached UPOS);
    a file rewritten between runs is read again, with its new labels."""
    import corpora.conllu
    from probes import run_probe

    train, test = ewt_slice(data_root, tmp_path, "train", 30), ewt_slice(data_root, tmp_path, "test", 20)
    reads: list[str] = []
    real = corpora.conllu.parse_column  # called once at the start of each read of a file

    def counted(path, column):
        reads.append(f"{Path(path).name}:{column}")
        return real(path, column)

    monkeypatch.setattr("corpora.conllu.parse_column", counted)
    files = {"train": str(train), "test": str(test)}
    model = RandomEmbedder(num_layers=2, dim=8)
    first = run_probe("tag", model, options=files, layers="0", baselines=False, show_progress=False)
    assert sorted(reads) == ["ewt-test.conllu:UPOS", "ewt-train.conllu:UPOS"]
    run_probe("tag", model, options={**files, "column": "XPOS"}, layers="0", baselines=False, show_progress=False)
    assert sorted(r for r in reads if r.endswith("XPOS")) == ["ewt-test.conllu:XPOS", "ewt-train.conllu:XPOS"]
    text = test.read_text(encoding="utf-8")
    test.write_text(text.replace("\tNOUN\t", "\tPROPN\t"), encoding="utf-8")
    again = run_probe("tag", model, options=files, layers="0", baselines=False, show_progress=False)
    assert reads.count("ewt-test.conllu:UPOS") == 2 and reads.count("ewt-train.conllu:UPOS") == 1
    assert again.result.dataset != first.result.dataset  # the new content, not the kept read


def test_a_limit_that_cuts_nothing_is_the_full_run(data_root, tmp_path):
    """An upload of 60 test sentences run under the app's 300: named "…:test:UPOS (limit 300)", a slice kept apart
    from the full run, though nothing was cut (an audit). A limit is recorded only where it left a sentence out."""
    from probes.run import run_probe

    train, test = ewt_slice(data_root, tmp_path, "train", 40), ewt_slice(data_root, tmp_path, "test", 30)
    options = {"train": str(train), "test": str(test)}
    whole = run_probe("tag", "glove-6b-50d", limit=300, options=options, baselines=False, show_progress=False)
    assert whole.result.params["limit"] is None
    assert not whole.to_frame()["dataset"].str.contains("(limit", regex=False).any()
    cut = run_probe("tag", "glove-6b-50d", limit=35, options=options, baselines=False, show_progress=False)
    assert cut.result.params["limit"] == 35  # train's 40 cut to 35 (test's 30 whole): a slice
    frame = cut.to_frame()
    assert frame["dataset"].str.endswith("(limit 35)").all(), set(frame["dataset"])
    # the review of round ten: the whole run still embedded under a "-limit300" feature key, a second copy of the
    # full run's entry; and a malformed sentence just past a limit failed a run that never reads it
    from probes.tasks.tag import load_splits

    _, _, train_split, _ = load_splits(300, **options)
    assert train_split.key == load_splits(None, **options)[2].key
    broken = tmp_path / "broken-train.conllu"
    broken.write_text(train.read_text(encoding="utf-8") + "1\tbad line\n\n", encoding="utf-8")
    past = run_probe("tag", "glove-6b-50d", limit=40, options={**options, "train": str(broken)}, baselines=False,
                     show_progress=False)  # fmt: skip
    assert past.result.params["limit"] == 40  # something lies past it: a slice
