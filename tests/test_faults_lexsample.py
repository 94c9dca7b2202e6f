"""Issue 27, row 18 of docs/reliability.md: a lexical sample through the WSD probe.

Per-target-word rows beside the pooled one, the number of target words found (and where they came
from: the lemma column or the word form), the static-model tie rule where users read it (``--help``,
docs/datasets.md), and re-runs that reuse an identical baseline file instead of writing another.
Each test failed before. The files are real SemCor occurrences of a few lemmas
(``tests.test_data_lexical_sample.semcor_lexical_lines``), written by the test.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from probes.__main__ import main
from probes.registry import RunContext
from probes.results import content_digest, results_frame
from probes.run import run_probe
from probes.stats.intervals import instances
from probes.tasks.wsd.probe import run_wsd, wsd_baselines
from probes.tasks.wsd.tables import wsd_tables
from tests.probe_helpers import RandomEmbedder
from tests.test_data_lexical_sample import semcor_lexical_lines

REPO = Path(__file__).resolve().parent.parent
NOTE = "(from the word form; give a lemma column to merge inflections like serve/served/serves)"


@pytest.fixture(scope="module")
def lines() -> list[str]:
    """sentence, index, label, lemma: SemCor's make, say, time, year (man is not in these sentences)."""
    return semcor_lexical_lines(300)


def write(path: Path, lines: list[str], columns: int = 4) -> Path:
    path.write_text("\n".join("\t".join(ln.split("\t")[:columns]) for ln in lines) + "\n", encoding="utf-8")
    return path


def _ctx(tmp_path, **kw) -> RunContext:
    return RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "features", **kw)


def test_a_multi_word_sample_gives_f1_per_word_beside_the_pooled_rows(tmp_path, lines):
    tsv = write(tmp_path / "four.tsv", lines)
    lemmas = [ln.split("\t")[3] for ln in lines]
    emb = RandomEmbedder(num_layers=2, dim=16, noise=0.5)
    res = run_wsd(emb, "0,1", _ctx(tmp_path), train=str(tsv), folds=3)
    name = res.dataset
    words = sorted(set(lemmas))
    assert len(words) >= 3
    assert {r["dataset"] for r in res.rows} == {name} | {f"{name}:word={w}" for w in words}
    pooled = [r for r in res.rows if r["dataset"] == name]
    assert [(r["layer"], r["metric"]) for r in pooled] == [(lay, m) for lay in ("0", "1") for m in ("F1", "P", "R")]
    for layer in ("0", "1"):
        correct = instances(res, name, layer)  # the pooled outcomes, one per line of the file
        by_word = defaultdict(list)
        for ok, w in zip(correct, lemmas):
            by_word[w].append(ok)
        rows = {r["dataset"]: r for r in res.rows if r["layer"] == layer and ":word=" in r["dataset"]}
        assert [d.split(":word=")[1] for d in rows] == words  # sorted, one F1 row each
        for w, oks in by_word.items():
            r = rows[f"{name}:word={w}"]
            assert r["metric"] == "F1" and r["n"] == len(oks)
            assert r["value"] == round(100 * float(np.mean(oks)), 2)
            assert r["lo"] <= r["value"] <= r["hi"] and (r["unit"], r["clusters"]) == ("instance", len(oks))
        assert sum(r["n"] for r in rows.values()) == pooled[0]["n"]
    # The baseline has its per-word rows too; the per-user-dataset table is still the pooled one alone,
    # and the per-word table puts each model at its best pooled layer beside the baseline.
    (mfl,) = wsd_baselines(_ctx(tmp_path), train=str(tsv), folds=3)
    assert {r["dataset"] for r in mfl.rows} == {r["dataset"] for r in res.rows}
    tables = wsd_tables(results_frame([res, mfl]), [])
    assert sorted(tables) == [f"wsd_data:{name}", f"wsd_words:{name}"]
    assert len(tables[f"wsd_data:{name}"]) == 3  # two layers and the baseline: no per-word row leaks in
    best = max(
        ("0", "1"), key=lambda lay: next(r["value"] for r in pooled if r["layer"] == lay and r["metric"] == "F1")
    )
    per_word = tables[f"wsd_words:{name}"]
    assert list(per_word.columns) == ["word", "n", "most-frequent-label", f"random-test (layer {best})"]
    assert list(per_word.word) == words and list(per_word.n) == [lemmas.count(w) for w in words]


def test_a_single_word_sample_has_no_breakdown(tmp_path, lines):
    say = [ln for ln in lines if ln.split("\t")[3] == "say"]
    res = run_wsd(
        RandomEmbedder(num_layers=1, dim=8, noise=0.5),
        "0",
        _ctx(tmp_path),
        train=str(write(tmp_path / "say.tsv", say)),
        folds=3,
    )
    assert {r["dataset"] for r in res.rows} == {res.dataset}  # the per-word row would repeat the pooled one
    assert res.extra["target_words"] == 1


def test_the_number_of_target_words_is_stated_and_where_they_came_from(tmp_path, lines):
    forms = sorted({ln.split("\t")[0].split()[int(ln.split("\t")[1])].lower() for ln in lines})
    lemmas = sorted({ln.split("\t")[3] for ln in lines})
    assert len(forms) > len(lemmas)  # said, says, say; years, year …: inflections split without a lemma
    emb = RandomEmbedder(num_layers=1, dim=8, noise=0.5)
    three = run_wsd(emb, "0", _ctx(tmp_path), train=str(write(tmp_path / "three.tsv", lines, 3)), folds=3)
    four = run_wsd(emb, "0", _ctx(tmp_path), train=str(write(tmp_path / "four.tsv", lines)), folds=3)
    assert (three.extra["target_words"], three.extra["lines_without_lemma"]) == (len(forms), len(lines))
    assert (four.extra["target_words"], four.extra["lines_without_lemma"]) == (len(lemmas), 0)
    assert {r["dataset"].split(":word=")[1] for r in three.rows if ":word=" in r["dataset"]} == set(forms)
    # Held out: the test file's targets are counted; lines without a lemma in either file are named.
    half = write(tmp_path / "test.tsv", lines[1::2], 3)
    held = run_wsd(emb, "0", _ctx(tmp_path), train=str(write(tmp_path / "train.tsv", lines[::2])), test=str(half))
    test_forms = {ln.split("\t")[0].split()[int(ln.split("\t")[1])].lower() for ln in lines[1::2]}
    assert held.extra["target_words"] == len(test_forms)
    assert (held.extra["lines_without_lemma"], held.extra["lines"]) == (len(lines[1::2]), len(lines))


def test_the_command_line_says_how_many_target_words_it_found(tmp_path, lines, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    forms = {ln.split("\t")[0].split()[int(ln.split("\t")[1])].lower() for ln in lines}
    three = write(tmp_path / "three.tsv", lines, 3)
    out = tmp_path / "results"
    argv = ["wsd", "--model", "glove-6b-50d", "--train", str(three), "--folds", "3", "--results", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"found {len(forms)} target words {NOTE}" in printed
    assert ":word=said" in printed and ":word=says" in printed  # the per-word rows in the summary table
    saved = [json.loads(p.read_text()) for p in out.glob("glove-6b-50d__*.json")]
    assert [s["extra"]["target_words"] for s in saved] == [len(forms)]
    assert (
        main(["wsd", "--model", "glove-6b-50d", "--train", str(write(tmp_path / "four.tsv", lines)), "--folds", "3"])
        == 0
    )
    assert "target words (from the lemma column)" in capsys.readouterr().out


def test_the_tie_rule_is_in_the_help_and_the_docs(capsys):
    with pytest.raises(SystemExit):
        main(["wsd", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a static model gives one vector per word type" in text and "most frequent training label" in text
    docs = " ".join((REPO / "docs" / "datasets.md").read_text(encoding="utf-8").split())
    assert "tie" in docs and "one vector per word type" in docs and "most-frequent-label" in docs


def test_a_rerun_reuses_an_identical_baseline_file(tmp_path, lines):
    tsv = write(tmp_path / "four.tsv", lines)
    out = tmp_path / "results"
    opts = {"train": str(tsv), "folds": 3}
    first = run_probe("wsd", None, options=opts, results_dir=out, show_progress=False)
    again = run_probe("wsd", None, options=opts, results_dir=out, show_progress=False)
    assert len(list(out.glob("*.json"))) == 1 and again.saved == first.saved
    assert content_digest(again.baselines[0]) == content_digest(first.baselines[0])
    # Other rows (another seed: other folds) are another file; so is a slice (--limit) of the same data.
    run_probe("wsd", None, options=opts, seed=1, results_dir=out, show_progress=False)
    run_probe("wsd", None, options=opts, limit=len(lines) + 5, results_dir=out, show_progress=False)
    assert len(list(out.glob("*.json"))) == 3
    # Only the newest file of that data counts: seed 0 again after seed 1 is written anew, so that
    # tables (newest wins) show the rows of the last run.
    run_probe("wsd", None, options=opts, results_dir=out, show_progress=False)
    assert len(list(out.glob("*.json"))) == 4
    # A file whose rows were edited by hand is never reused.
    path = run_probe("wsd", None, options=opts, results_dir=out, show_progress=False).saved[0]
    data = json.loads(path.read_text())
    data["rows"][0]["value"] = 99.99
    path.write_text(json.dumps(data))
    assert run_probe("wsd", None, options=opts, results_dir=out, show_progress=False).saved[0] != path
    assert len(list(out.glob("*.json"))) == 5


def test_per_word_rows_are_not_offered_as_evaluation_sets():
    """The app's "Evaluation set" picker lists the pooled lexical sample, not one entry per target word."""
    import pandas as pd

    from probes.registry import get_probe
    from viz.results import datasets_of

    df = pd.DataFrame({"probe": ["wsd"] * 4, "dataset": ["ALL", "ALL:NOUN", "mine@ab", "mine@ab:word=bank (limit 3)"]})
    assert datasets_of(df, get_probe("wsd")) == ["ALL", "mine@ab"]
