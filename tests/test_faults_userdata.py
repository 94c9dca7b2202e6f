"""Faults found by running unseen data through "Probe your own data" (issue 27, items 16 and 17).

16: the results of a probe on the user's files (``tag --train F --test F``, ``wsd --train F``) are saved in
``<cache>/results``; ``reproduce --tables-only`` read ``OUT/runs`` alone (a header-only tables.md, no word)
and ``write_tables`` dropped the per-dataset tables it built. 17: the feature cache was keyed by the
dataset's name, so the same train file under another ``--name`` or beside another test file was embedded
again. docs/reliability.md maps each fault to its test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from probes import run_probe
from probes.cli import main
from probes.reporting.tables import build_tables, markdown_table, write_tables
from tests.probe_helpers import RandomEmbedder
from tests.test_data_lexical_sample import semcor_lexical_lines


def _ewt_slices(data_root: Path, tmp: Path) -> dict[str, Path]:
    """Real UD EWT slices: train (60 sentences), two different test files (30 sentences each)."""
    src = (data_root / "ud_english_ewt" / "en_ewt-ud-train.conllu").read_text(encoding="utf-8").split("\n\n")
    test = (data_root / "ud_english_ewt" / "en_ewt-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")
    parts = {"ewt-train": src[:60], "ewt-test": test[:30], "other-test": test[30:60]}
    files = {}
    for name, sents in parts.items():
        files[name] = tmp / f"{name}.conllu"
        files[name].write_text("\n\n".join(sents) + "\n\n", encoding="utf-8")
    return files


def _words(path: Path) -> set[tuple[str, ...]]:
    """The sentences of a CoNLL-U file as word tuples (what the embedder sees)."""
    out = set()
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        rows = [ln.split("\t") for ln in block.splitlines() if ln and not ln.startswith("#")]
        words = tuple(r[1] for r in rows if r[0].isdigit())
        if words:
            out.add(words)
    return out


class RecordingEmbedder(RandomEmbedder):
    """Records every sentence it embeds: which split was extracted, not only how many batches."""

    def __init__(self) -> None:
        super().__init__(num_layers=2, dim=16)
        self.embedded: list[tuple[str, ...]] = []

    def _embed_batch(self, sentences, with_attention):
        self.embedded += [tuple(s) for s in sentences]
        return super()._embed_batch(sentences, with_attention)


# 16: user-data results reach the tables ------------------------------------------------------------------


@pytest.fixture()
def user_runs(data_root, tmp_path, monkeypatch) -> Path:
    """A tag run and a lexical-sample WSD run saved where a probe command saves them: ``<cache>/results``."""
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    files = _ewt_slices(data_root, tmp_path)
    saved = tmp_path / "cache" / "results"
    emb, kw = RandomEmbedder(num_layers=2, dim=16), dict(results_dir=saved, show_progress=False)
    options = {"train": str(files["ewt-train"]), "test": str(files["ewt-test"]), "column": "UPOS"}
    run_probe("tag", emb, layers="0,1", options=options, feature_root=tmp_path / "f", **kw)
    tsv = tmp_path / "sample.tsv"
    tsv.write_text("\n".join(semcor_lexical_lines()) + "\n", encoding="utf-8")
    run_probe("wsd", emb, layers="0", options={"train": str(tsv), "folds": 3}, feature_root=tmp_path / "f", **kw)
    return saved


def test_write_tables_writes_every_table_it_built_the_user_datasets_too(user_runs, tmp_path):
    out = tmp_path / "out"
    md = write_tables(user_runs, out).read_text(encoding="utf-8")
    tables = build_tables(user_runs)
    user = [k for k in tables if k.startswith(("tag:", "wsd_data:"))]
    assert {k.split(":")[0] for k in user} == {"tag", "wsd_data"}  # both kinds were built ...
    csvs = {p.read_text(encoding="utf-8") for p in out.glob("*.csv")}
    assert len(csvs) == len(tables)
    for key, table in tables.items():  # ... and no table built is dropped: each in tables.md and in a CSV
        assert f"\n\n{markdown_table(table)}\n" in md and table.to_csv(index=False) in csvs, key
    assert "## tag: accuracy (%) on ewt@" in md and ":test:UPOS, by layer" in md


def test_tables_only_reads_where_probe_commands_save(user_runs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "--out", str(out), "--tables-only"]) == 0  # no OUT/runs: <cache>/results
    assert "## tag: accuracy (%) on ewt@" in (out / "tables.md").read_text(encoding="utf-8")
    printed = capsys.readouterr().out
    assert f"reading results from {user_runs}\n" in printed and f"tables written to {out}/tables.md" in printed


def test_tables_only_honours_results_and_refuses_a_missing_folder(user_runs, tmp_path, capsys):
    moved = shutil.move(user_runs, tmp_path / "elsewhere")
    out = tmp_path / "out"
    assert main(["reproduce", "--out", str(out), "--tables-only", "--results", str(moved)]) == 0
    assert "## tag: accuracy (%) on ewt@" in (out / "tables.md").read_text(encoding="utf-8")
    assert f"reading results from {moved}\n" in capsys.readouterr().out
    assert main(["reproduce", "--out", str(tmp_path / "b"), "--tables-only", "--results", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --results ") and err.count("\n") == 1 and not (tmp_path / "b" / "tables.md").exists()


def test_tables_only_with_no_result_warns_in_one_line_and_writes_no_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "tables.md").write_text("earlier tables\n", encoding="utf-8")
    assert main(["reproduce", "--out", str(out), "--tables-only"]) == 0
    captured = capsys.readouterr()
    (warning,) = captured.err.splitlines()
    assert warning.startswith("warning: no results in ") and str(tmp_path / "cache" / "results") in warning
    assert "tables written" not in captured.out
    assert (out / "tables.md").read_text(encoding="utf-8") == "earlier tables\n"  # kept, not emptied
    assert sorted(p.name for p in out.iterdir()) == ["runs", "tables.md"]


# 17: the feature cache is keyed by each file's content ------------------------------------------------------


def test_a_train_file_is_embedded_once_whatever_its_name_or_test_file(data_root, tmp_path):
    files = _ewt_slices(data_root, tmp_path)
    train, test, other = (_words(files[k]) for k in ("ewt-train", "ewt-test", "other-test"))
    assert train and test and other and not (train & (test | other))
    emb = RecordingEmbedder()

    def run(name: str | None, train_file: Path, test_file: Path) -> str:
        emb.embedded.clear()
        options = {"train": str(train_file), "test": str(test_file), "column": "UPOS", "name": name}
        kw = dict(layers="0", baselines=False, results_dir=tmp_path / "r", feature_root=tmp_path / "f")
        return run_probe("tag", emb, options=options, show_progress=False, **kw).result.dataset

    first = run("alpha", files["ewt-train"], files["ewt-test"])
    assert set(emb.embedded) == train | test
    assert run("beta", files["ewt-train"], files["ewt-test"]).startswith("beta@") and emb.embedded == []
    assert run(None, files["ewt-train"], files["other-test"]).startswith("other-test@")  # default name, new test
    assert set(emb.embedded) == other  # only the new test file: 0 train sentences embedded again
    copy = shutil.copy(files["ewt-train"], tmp_path / "renamed.conllu")  # the same content, another name
    assert run("gamma", Path(copy), files["ewt-test"]) == first.replace("alpha@", "gamma@") and emb.embedded == []
    lines = files["ewt-train"].read_text(encoding="utf-8").split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith("1\t"))  # the first word of the first sentence
    lines[k] = "\t".join(["1", "Changed", *lines[k].split("\t")[2:]])
    Path(copy).write_text("\n".join(lines), encoding="utf-8")
    run("gamma", Path(copy), files["ewt-test"])
    assert set(emb.embedded) == _words(Path(copy)) and _words(Path(copy)) != train  # changed: extracted again


def test_the_reproduce_page_download_keeps_the_user_dataset_tables():
    """The app's "Download all tables" (``viz.reproduce.tables_markdown``) has the tables ``tables.md`` has,
    the per-user-dataset ones too (it listed only the built-in titles)."""
    import pandas as pd

    from probes.reporting.tables import dataset_table_title
    from viz.reproduce import tables_markdown

    table = pd.DataFrame({"model": ["glove-6b-50d"], "0": [91.5]})
    text = tables_markdown({"tag:ewt@1234abcd:accuracy": table})
    assert f"## {dataset_table_title('tag:ewt@1234abcd:accuracy')}" in text and "91.5" in text


def test_the_reproduce_page_markdown_keeps_each_tables_note():
    """A pasted table keeps its caveats: "Download all tables" has every note ``tables.md`` prints under a table
    (how the claim tests' intervals and verdicts were made, …) — it had the tables alone."""
    from probes.reporting.tables import TABLE_NOTES
    from viz.reproduce import load_tables, tables_markdown

    results = Path(__file__).resolve().parent.parent / "docs" / "results"
    text = tables_markdown(load_tables(results / "runs"))
    committed = (results / "tables.md").read_text(encoding="utf-8")
    for key in ("claims", "best_layer", "selectivity_mdl", "published_rigor"):
        assert TABLE_NOTES[key] in committed and TABLE_NOTES[key] in text, key
