"""Contextuality (Ethayarajh 2019): the measures' defining properties, a static and a contextual model on a
real SemCor slice, the ``contextuality`` probe from the command line, ``reproduce`` and ``sweep`` (bad input:
one error line), the app's upload tab, and the committed docs/results/contextuality/ re-rendered byte for
byte from its runs."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from corpora.paths import REPO_ROOT
from models.registry import load_embedder
from probes.__main__ import main
from probes.estimators.contextuality import (
    explainable_variance,
    intra_sentence_similarity,
    layer_measures,
    select_words,
    self_similarity,
    word_profile,
)
from probes.registry import ProbeSpec, RunContext, builtin_probe_names, get_probe
from probes.results import load_results
from probes.tasks.contextuality import TITLES, run_contextuality, write_tables
from probes.tasks.sentences import semcor_sentences
from tests.test_app import assert_ok, open_page, texts

COMMITTED = REPO_ROOT / "docs" / "results" / "contextuality"


def test_self_similarity_is_the_mean_pairwise_cosine():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 5))
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    C = U @ U.T
    assert self_similarity(X) == pytest.approx((C.sum() - 7) / 42)
    assert self_similarity(np.tile(X[:1], (4, 1)) * np.array([[1], [2], [3], [0.5]])) == pytest.approx(1.0)
    assert np.isnan(self_similarity(X[:1]))
    assert self_similarity(np.vstack([X[:2], np.zeros((3, 5))])) == pytest.approx(C[0, 1])  # zero rows left out


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
    sel = select_words(keys, sentence_of_row, min_occurrences=5, max_occurrences=40, seed=0)
    m = layer_measures(X, sel, offsets, min_pairs=3000)
    assert abs(m["anisotropy"]["value"]) < 0.01
    assert abs(m["self_similarity_adj"]["value"]) < 0.01
    assert abs(m["explainable_variance_adj"]["value"]) < 0.01
    # The sentence mean contains the word itself: for n random words E[cos] ≈ 1/√n, not 0 (as defined).
    assert m["intra_sentence_similarity_adj"]["value"] == pytest.approx(1 / np.sqrt(10), abs=0.02)
    for measure in m.values():  # ... and each with its interval, which holds the true value 0 (or 1/√10)
        assert measure["lo"] <= measure["value"] <= measure["hi"] and measure["clusters"] >= measure["n"] > 0
    assert m["self_similarity_adj"]["lo"] < 0 < m["self_similarity_adj"]["hi"]
    assert m["anisotropy"]["se"] < 0.0005 and m["anisotropy"]["lo"] < 0 < m["anisotropy"]["hi"]


def test_intra_sentence_similarity_measures_the_words_the_anisotropy_is_drawn_from():
    """The anisotropy subtracted from intra-sentence similarity is drawn from the measured words (punctuation left
    out), but the measure averaged over every token: its adjusted value mixed two sets of rows. Punctuation rows
    (key "") pointing one shared way made it ~0.15 higher here; they no longer enter it."""
    rng = np.random.default_rng(2)
    sentences, words_per = 300, 8
    lengths = np.full(sentences, words_per + 2)  # 8 words and 2 punctuation tokens a sentence
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sentence_of_row = np.repeat(np.arange(sentences), lengths)
    keys = np.array([f"w{i}" for i in rng.integers(0, 50, size=offsets[-1])], dtype=object)
    punct = np.tile(np.r_[np.zeros(words_per, bool), True, True], sentences)
    keys[punct] = ""
    X = rng.normal(size=(offsets[-1], 128))
    X[punct] = 5.0 + rng.normal(size=(punct.sum(), 128)) * 0.1  # all punctuation alike
    sel = select_words(keys, sentence_of_row, min_occurrences=5, max_occurrences=40, seed=0)
    m = layer_measures(X, sel, offsets, min_pairs=3000)
    words_only = np.nanmean(
        [
            intra_sentence_similarity(X[offsets[i] : offsets[i + 1]][~punct[offsets[i] : offsets[i + 1]]])
            for i in range(sentences)
        ]
    )
    assert m["intra_sentence_similarity"]["value"] == pytest.approx(words_only, abs=1e-9)
    assert m["intra_sentence_similarity_adj"]["value"] == pytest.approx(1 / np.sqrt(words_per), abs=0.03)


def test_selection_is_seeded_one_occurrence_per_sentence_and_refuses_rare_words():
    keys = np.array(["a", "a", "b", "a", "", "a", "b", "a"], dtype=object)
    sent = np.array([0, 0, 0, 1, 1, 2, 2, 3])
    sel = select_words(keys, sent, min_occurrences=4, seed=3)
    assert sel.words == ("a",) and list(sel.rows[0]) == [0, 3, 5, 7]
    pairs = sel.pairs(500)
    assert len(pairs) == 500 and (sent[pairs[:, 0]] != sent[pairs[:, 1]]).all() and (keys[pairs] != "").all()
    assert (keys[pairs[:, 0]] != keys[pairs[:, 1]]).all()
    again = select_words(keys, sent, min_occurrences=4, seed=3)
    np.testing.assert_array_equal(pairs, again.pairs(500))
    np.testing.assert_array_equal(pairs[:100], again.pairs(100))  # one stream: more pairs extend it
    assert len(sel.random_sets(0)[0]) == 4 and len(set(sel.random_sets(0)[0])) == 4
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
    res = run_contextuality(
        load_embedder("glove-6b-50d"),
        None,
        RunContext(limit=80, feature_root=tmp_path, show_progress=False),
        min_occurrences=3,
    )
    assert rows_of(res, "self_similarity") == {"0": 1.0}
    assert rows_of(res, "explainable_variance") == {"0": 1.0}
    assert rows_of(res, "self_similarity_adj")["0"] == pytest.approx(1 - rows_of(res, "anisotropy")["0"], abs=1e-4)
    assert res.dataset == "semcor-first80" and res.extra["words_measured"] > 20


def test_a_word_asked_for_and_not_measured_is_said(tmp_path):
    """The README's ``--words bank,play --min-occurrences 3`` measured "play" alone ("bank" is in fewer than 3 of the
    sentences), and nothing said so but ``words_measured: 1`` in the result file."""
    res = run_contextuality(
        load_embedder("glove-6b-50d"),
        None,
        RunContext(limit=80, feature_root=tmp_path, show_progress=False),
        min_occurrences=3,
        words=["said", "zyzzyva"],
    )
    assert res.extra["words_measured"] == 1
    assert res.extra["warning"] == "zyzzyva: in fewer than 3 sentences of semcor-first80; not measured."
    sampled = run_contextuality(  # a word that qualifies but the --max-words sample left out is not called rare
        load_embedder("glove-6b-50d"),
        None,
        RunContext(limit=80, feature_root=tmp_path, show_progress=False),
        min_occurrences=3,
        max_words=1,
        words=["said", "of", "zyzzyva"],
    )
    left_out = next(w for w in ("said", "of") if w not in sampled.extra["example_words"])
    assert sampled.extra["warning"] == (
        f"zyzzyva: in fewer than 3 sentences of semcor-first80; {left_out}: left out of the --max-words sample; "
        "not measured."
    )


def test_elmo_layers_are_contextual_and_layer_0_is_not(tmp_path):
    emb = load_embedder("elmo-small")
    res = run_contextuality(
        emb, None, RunContext(limit=60, feature_root=tmp_path, show_progress=False, seed=1), min_occurrences=3
    )
    ss = rows_of(res, "self_similarity")
    assert set(ss) == {"0", "1", "2"}
    assert ss["0"] == pytest.approx(1.0, abs=1e-3)  # the char-CNN layer: one vector per word form
    assert ss["1"] < 0.95 and ss["2"] < 0.95
    assert {r["metric"] for r in res.rows} >= {"anisotropy", "mev_baseline", "intra_sentence_similarity_adj"}


def test_a_registered_probe_spec_run_on_request_with_its_own_report():
    spec = get_probe("contextuality")
    assert isinstance(spec, ProbeSpec) and spec.run is run_contextuality and spec.report is write_tables
    assert spec.table_titles == TITLES and not spec.uses_layers and spec.baselines(RunContext()) == []
    assert "contextuality" not in builtin_probe_names()  # reproduce/sweep run it on request only
    assert spec.options_from({"words": "bank, play"})["words"] == ["bank", "play"]


def test_cli_writes_a_result_and_the_report_renders_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(["the bank raised rates today ."] * 3 + ["we sat by the river bank ."] * 3 + ["a bank is a place ."]),
        encoding="utf-8",
    )
    runs = tmp_path / "runs"
    code = main(
        [
            "contextuality",
            "--model",
            "glove-6b-50d",
            "--corpus",
            str(corpus),
            "--min-occurrences",
            "3",
            "--results",
            str(runs),
        ]
    )
    assert code == 0
    assert "self_similarity_adj" in capsys.readouterr().out  # the summary table per layer
    df = load_results(runs)
    assert set(df["probe"]) == {"contextuality"} and set(df["layer"]) == {"0"}
    assert df.loc[df.metric == "self_similarity", "value"].item() == 1.0
    saved = json.loads(next(runs.glob("*.json")).read_text())
    assert saved["command"].startswith("python -m probes contextuality") and saved["extra"]["words_measured"] >= 2
    # the whole file, not a slice: a limit that cut nothing is not recorded (it had put the run apart as "--limit 2000")
    assert saved["dataset"].startswith("corpus-") and saved["params"]["limit"] is None
    tables = write_tables(runs, tmp_path / "report").read_text()
    assert f"Command: `{saved['command']}`" in tables and "| glove-6b-50d | corpus-" in tables


def test_reproduce_and_sweep_run_it_on_every_layer(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert (
        main(
            [
                "reproduce",
                "--models",
                "glove-6b-50d,elmo-small",
                "--probes",
                "contextuality",
                "--limit",
                "40",
                "--min-occurrences",
                "3",
                "--threads",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    df = load_results(out / "contextuality" / "runs")  # its own folder and report (ProbeSpec.report) ...
    assert set(df.probe) == {"contextuality"} and set(df.dataset) == {"semcor-first40"}
    assert "| elmo-small | semcor-first40 |" in (out / "contextuality" / "tables.md").read_text()
    assert not (out / "tables.md").exists()  # ... never in OUT/tables.md (no other probe ran: no table at all)
    for model, layers in (("glove-6b-50d", {"0"}), ("elmo-small", {"0", "1", "2"})):
        part = df[df.model == model]
        assert set(part.layer) == layers and (part.groupby("layer").metric.nunique() == len(TITLES)).all()
    assert (
        main(
            [
                "sweep",
                "--models",
                "glove-6b-50d",
                "--probes",
                "contextuality",
                "--limit",
                "40",
                "--min-occurrences",
                "3",
                "--results",
                str(tmp_path / "sweep"),
            ]
        )
        == 0
    )
    swept = load_results(tmp_path / "sweep")
    mine = df[df.model == "glove-6b-50d"].set_index(["layer", "metric"]).value
    assert swept.set_index(["layer", "metric"]).value.sort_index().equals(mine.sort_index())  # the same numbers


def test_the_committed_report_renders_byte_identical_from_its_runs(tmp_path):
    shutil.copytree(COMMITTED / "runs", tmp_path / "runs")
    write_tables(tmp_path / "runs", tmp_path)
    committed = sorted(p.name for p in COMMITTED.iterdir() if p.suffix in (".md", ".csv") and p.name != "README.md")
    assert len(committed) == len(TITLES) + 1
    for name in committed:
        assert (tmp_path / name).read_bytes() == (COMMITTED / name).read_bytes(), name


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--min-occurrences", "1"], "at least 2 sentences"),
        (["--corpus", "/no/such/file.txt"], "no such file"),
        (["--words", "zzzzqqq"], "No word among"),
        (["--pairs", "0"], "positive"),
    ],
)
def test_bad_requests_end_with_one_error_line(args, fragment, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    code = main(["contextuality", "--model", "glove-6b-50d", "--limit", "40", "--results", str(tmp_path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and fragment in err[0], err


def test_semcor_sentences_split_multiword_tokens():
    name, sentences = semcor_sentences(5)
    assert name == "semcor-first5" and len(sentences) == 5
    assert not any("_" in w for s in sentences for w in s)


def test_the_upload_tab_previews_and_runs_a_corpus_file(tmp_path, monkeypatch):
    """Its optional corpus file makes it a task of the Probes page's "Your data" tab, with no probe name there."""
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    at = open_page("probes", tab="Your data")
    at.radio(key="up_task").set_value("contextuality").run()
    at.number_input(key="up_contextuality_min_occurrences").set_value(3)
    at.file_uploader(key="up_contextuality_corpus").upload(
        "bank.txt", b"the bank is here .\n" * 3 + b"a river bank .\n"
    )
    at.run()
    assert_ok(at)
    counts = next(d.value for d in at.dataframe if "words measured" in d.value.columns)
    assert counts.iloc[0][["sentences", "words", "words measured"]].tolist() == [4, 19, 4]  # the, bank, is, here
    at.selectbox(key="up_model").set_value("glove-6b-50d")
    at.button(key="up_run").click().run()
    assert_ok(at)
    assert re.search(r"done; saved to \S*cache/results\.", texts(at.success))  # the folder as it is
    saved = json.loads(next((tmp_path / "cache" / "results").glob("glove-6b-50d__contextuality__*.json")).read_text())
    assert saved["dataset"].startswith("bank-") and saved["extra"]["words_measured"] == 4


def test_a_corpus_file_is_read_as_every_data_file_is(tmp_path):
    """``--corpus`` read its file with ``splitlines`` (U+2028 or NEL inside a line made two sentences), kept a
    byte-order mark on the first word, named a bad byte by offset alone, and called a 3-line file "…-first2000"."""
    from probes.errors import ProbeInputError
    from probes.tasks.sentences import corpus_sentences

    plain = tmp_path / "plain.txt"
    plain.write_text("the bank rose .\nby the river\u2028bank .\nmoney\x85bank !\n", encoding="utf-8")
    name, sentences = corpus_sentences(plain, 2000)
    assert len(sentences) == 3 and sentences[1] == ["by", "the", "river", "bank", "."] and "first" not in name
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert corpus_sentences(bom, None)[1][0][0] == "the"
    assert corpus_sentences(plain, 2)[0].endswith("-first2") and len(corpus_sentences(plain, 2)[1]) == 2
    # the same text with CRLF line ends keeps its name (earlier runs were named from the text, line ends as LF),
    # and a pipe (``--corpus <(zcat corpus.gz)``) is read
    crlf = tmp_path / "plain.crlf"
    crlf.write_bytes(plain.read_bytes().replace(b"\n", b"\r\n"))
    assert corpus_sentences(crlf, None)[0].split("-")[-1] == name.split("-")[-1]
    import os

    read, write = os.pipe()
    os.write(write, b"one sentence here .\n")
    os.close(write)
    assert corpus_sentences(f"/dev/fd/{read}", None)[1] == [["one", "sentence", "here", "."]]
    os.close(read)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"one line\nna\xefve\n")
    with pytest.raises(ProbeInputError, match=r"--corpus .*latin\.txt:2: not UTF-8 text \(byte 0xef at column 3\)"):
        corpus_sentences(latin, None)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max-occurrences", "1"], "--max-occurrences: a similarity needs a word in at least 2 sentences"),
        (["--max-occurrences", "0"], "--max-occurrences"),
    ],
)
def test_occurrence_bounds_that_measure_no_word_are_refused(flags, message, tmp_path, capsys):
    """``--max-occurrences 1`` ran to exit 0 with self-similarity "—" over n = 0 and an explainable variance of
    0.000, said nowhere; ``--min-occurrences 1`` was already refused for that reason. (Max below min is fine: a
    word with at least min sentences is measured on max of them.)"""
    argv = ["contextuality", "--model", "glove-6b-50d", "--limit", "50", "--results", str(tmp_path / "r"), *flags]
    assert main(argv) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "r").exists()
