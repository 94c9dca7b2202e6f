"""The Probes page's "Your data" tab under AppTest: upload real UD EWT slices, preview, run, saved results;
an over-limit upload is refused naming the limit; a malformed file is one message with its line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_app import assert_ok, open_page, texts


def ewt_bytes(data_root: Path, split: str, n: int) -> bytes:
    """The first ``n`` sentences of a UD EWT file, verbatim."""
    out, blanks = [], 0
    with open(data_root / "ud_english_ewt" / f"en_ewt-ud-{split}.conllu", encoding="utf-8") as fh:
        for line in fh:
            out.append(line)
            blanks += not line.strip()
            if blanks == n:
                break
    return "".join(out).encode()


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def upload(at, task: str, role: str, name: str, data: bytes):
    at.file_uploader(key=f"up_{task}_{role}").upload(name, data)


def open_task(task: str):
    """The "Your data" tab with ``task`` picked (the tasks are the registered probes that declare inputs)."""
    at = open_page("probes", tab="Your data")
    at.radio(key="up_task").set_value(task).run()
    return at


def test_upload_preview_run_and_saved_results(data_root, cache):
    at = open_task("tag")
    assert "Upload a training file and a test file (a dev file is optional)" in texts(at.info)
    # The form is the probe's options: choices are selectboxes, command-line-only options are left out.
    assert at.selectbox(key="up_tag_scheme").options == ["tag", "bio"]
    assert at.selectbox(key="up_tag_format").options == ["(default)", "conllu", "columns"]
    assert [u.key for u in at.file_uploader] == ["up_tag_train", "up_tag_dev", "up_tag_test"]
    upload(at, "tag", "train", "ewt-train.conllu", ewt_bytes(data_root, "train", 40))
    upload(at, "tag", "test", "ewt-test.conllu", ewt_bytes(data_root, "test", 20))
    at.run()
    assert_ok(at)
    md = texts(at.markdown)
    assert "label column UPOS" in md and "**ewt@" in md
    counts = next(d.value for d in at.dataframe if "scored words" in d.value.columns)
    assert list(counts["file"]) == ["train", "test"] and list(counts["sentences"]) == [40, 20]
    assert (cache / "uploads").is_dir()
    at.selectbox(key="up_model").set_value("glove-6b-50d")
    at.button(key="up_run").click().run()
    assert_ok(at)
    assert at.query_params.get("up_model", "glove-6b-50d") in ("glove-6b-50d", ["glove-6b-50d"])  # linked (30), or
    # absent: the default, which an absent parameter stands for
    assert re.search(r"done; saved to \S*cache/results\.", texts(at.success))  # the folder as it is
    saved = sorted((cache / "results").glob("*.json"))
    assert [p.name.split("__")[:2] for p in saved] == [["glove-6b-50d", "tag"], ["majority-label", "tag"]]
    row = json.loads(saved[0].read_text())["rows"][0]
    assert row["dataset"].endswith(":test:UPOS") and row["n"] == counts["scored words"].iloc[1]
    # The run is drawn layer by layer, its baseline as its own series.
    assert at.get("plotly_chart")


def test_an_upload_over_the_limit_is_refused_naming_the_limit(data_root, cache, monkeypatch):
    import app_pages.probe_upload as upload_page

    monkeypatch.setattr(upload_page, "MAX_MB", 0.01)
    at = open_task("tag")
    assert "**0.01 MB**" in texts(at.caption)
    upload(at, "tag", "train", "big.conllu", ewt_bytes(data_root, "train", 40))
    at.run()
    assert not at.exception
    (err,) = at.error
    assert "big.conllu is" in texts([err]) and "limited to 0.01 MB per file" in texts([err])
    assert not (cache / "uploads").exists()


def test_a_malformed_upload_is_one_message_with_the_line(data_root, cache):
    at = open_task("tag")
    good = ewt_bytes(data_root, "test", 5)
    bad = good.replace(b"\tPROPN\t", b"\t", 1)
    upload(at, "tag", "train", "good.conllu", good)
    upload(at, "tag", "test", "bad.conllu", bad)
    at.run()
    assert not at.exception
    (err,) = at.error
    line = next(i for i, t in enumerate(bad.decode().splitlines(), 1) if t.count("\t") == 8)
    assert f"bad.conllu:{line}: expected 10 tab-separated fields" in texts([err])
    assert "Traceback" not in err.value and not [b for b in at.button if b.key == "up_run"]
    assert not [p for p in (cache / "uploads").rglob("*") if p.is_file()]  # a rejected upload is not kept
    upload(at, "tag", "test", "fixed.conllu", good)
    at.run()
    assert_ok(at)
    assert sorted(p.name for p in (cache / "uploads").rglob("*") if p.is_file()) == ["fixed.conllu", "good.conllu"]


def test_span_files_are_previewed(data_root, cache, tmp_path):
    from tests.test_span_probe import ewt_records, write

    at = open_task("span")
    pairs = write(tmp_path / "arcs.jsonl", ewt_records(data_root, "dev", 12), True)
    upload(at, "span", "train", "arcs-train.jsonl", pairs.read_bytes())
    upload(at, "span", "test", "arcs-test.jsonl", pairs.read_bytes())
    at.run()
    assert_ok(at)
    assert "span pairs" in texts(at.markdown)
    counts = next(d.value for d in at.dataframe if "targets" in d.value.columns)
    assert list(counts["sentences"]) == [12, 12] and counts["targets"].iloc[0] > 100
    assert any("span text" in d.value.columns for d in at.dataframe)


def test_sense_files_preview_and_run_by_k_fold(cache):
    """A lexical-sample TSV from real SemCor (own labels): preview, then the WSD probe by 5-fold CV."""
    from tests.test_data_lexical_sample import semcor_lexical_lines

    lines = semcor_lexical_lines(200)
    at = open_task("wsd")
    assert "Upload a training file (a test file is optional)" in texts(at.info)
    widgets = [*at.text_input, *at.selectbox, *at.number_input, *at.checkbox]
    assert not [w.key for w in widgets if (w.key or "").startswith("up_wsd_")]  # --keys, --format …: command line
    upload(at, "wsd", "train", "semcor-sample.tsv", ("\n".join(lines) + "\n").encode())
    at.run()
    assert_ok(at)
    assert "scored by 5-fold cross-validation" in texts(at.markdown)
    counts = next(d.value for d in at.dataframe if "occurrences" in d.value.columns)
    assert list(counts["file"]) == ["train"] and counts["occurrences"].iloc[0] == len(lines)
    at.selectbox(key="up_model").set_value("glove-6b-50d")
    at.button(key="up_run").click().run()
    assert_ok(at)
    assert at.query_params.get("up_model", "glove-6b-50d") in ("glove-6b-50d", ["glove-6b-50d"])  # linked (30), or
    # absent: the default, which an absent parameter stands for
    assert re.search(r"done; saved to \S*cache/results\.", texts(at.success))  # the folder as it is
    saved = [json.loads(p.read_text()) for p in sorted((cache / "results").glob("*.json"))]
    model = next(r for r in saved if r["model"] == "glove-6b-50d")
    assert model["probe"] == "wsd" and model["dataset"].endswith("/5-fold")
    assert {r["n"] for r in model["rows"] if r["dataset"] == model["dataset"]} == {len(lines)}  # pooled rows
    assert any(r["model"] == "most-frequent-label" for r in saved)  # the baseline, its own result


def test_an_upload_run_on_a_full_disk_shows_its_numbers_and_says_they_are_not_kept(data_root, cache, monkeypatch):
    """The review of round ten: a full disk at the save lost the run's numbers in the app (an error box) and the
    error's wording spoke of the command line. The run's results are drawn, with why they are not kept."""
    import errno

    import probes.run

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    at = open_task("tag")
    upload(at, "tag", "train", "ewt-train.conllu", ewt_bytes(data_root, "train", 40))
    upload(at, "tag", "test", "ewt-test.conllu", ewt_bytes(data_root, "test", 20))
    at.run()
    monkeypatch.setattr(probes.run, "save_result", full)
    at.button(key="up_run").click().run()
    assert not at.exception and not at.error
    said = texts(at.warning)
    assert "done; NOT saved: The results could not be saved in" in said and "No space left on device" in said
    assert "command line" not in said and at.get("plotly_chart")


def test_a_label_a_visitor_types_is_shown_as_text_not_markdown(data_root, cache):
    """A label typed as ``--skip-label`` went into the preview's Markdown as it was: ``**x**[l](https://…)`` drew
    bold text and a live link (and the dataset's name in results every session reads)."""
    label = "**x**[l](https://evil.example)"
    planted = lambda split, n: ewt_bytes(data_root, split, n).replace(b"\tNOUN\t", f"\t{label}\t".encode())
    at = open_task("tag")
    upload(at, "tag", "train", "ewt-train.conllu", planted("train", 20))
    upload(at, "tag", "test", "ewt-test.conllu", planted("test", 10))
    at.text_input(key="up_tag_skip_label").set_value(label)
    at.run()
    assert_ok(at)
    source = "\n".join(str(e.value) for e in at.markdown)  # the Markdown as written, escapes and all
    assert r"(not \*\*x\*\*\[l\]\(https\://evil\.example\)\)" in source and "**x**" not in source
    assert "(not **x**[l](https://evil.example))" in texts(at.markdown)  # read as typed


def test_any_name_a_browser_sends_is_stored_and_two_sessions_store_one_file_at_once(cache):
    """``..`` (a crafted client) failed in ``os.replace`` onto the folder and left a temporary file; a name of 245+
    characters passed the file system's limit once ``.PID.tmp`` was added; two sessions (threads of one process)
    storing the same bytes under the same name at once shared one temporary file (5 of 20 tries: FileNotFoundError).
    Each was "an unexpected error occurred (OSError)"."""
    import threading

    from app_pages.probe_upload import MAX_NAME, save_upload

    for name in ("..", ".", "...", ".hidden.conllu", "ü" * 300 + ".conllu", "a" * 300 + ".conllu", "../../x.conllu"):
        path, _ = save_upload(name, name.encode())
        assert path.is_file() and path.read_bytes() == name.encode() and not path.name.startswith(".")
        assert len(path.name) <= MAX_NAME and path.parent.parent == cache / "uploads"
        assert path.suffix == Path(name).suffix or not Path(name).suffix.strip(".")
    errors = []

    def store(data: bytes) -> None:
        try:
            save_upload("same.conllu", data)
        except Exception as exc:  # noqa: BLE001 — any failure is the finding
            errors.append(exc)

    for k in range(20):
        threads = [threading.Thread(target=store, args=(b"x" * 2**20 + bytes([k]),)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [] and not list((cache / "uploads").rglob("*.tmp"))


def test_uploads_beyond_the_folders_limit_go_least_recently_used_first(cache, monkeypatch):
    """Every valid upload stayed in ``cache/uploads`` for ever: on a server shared over a network, visitors could
    fill its disk without pressing Run. Past the limit the least recently used are removed, never the one just
    stored; an upload stored again counts as used now."""
    import os

    from app_pages import probe_upload

    monkeypatch.setattr(probe_upload, "UPLOADS_KEEP_MB", 3)
    paths = []
    for k in range(3):
        path, new = probe_upload.save_upload(f"f{k}.conllu", bytes([k]) * 2**20)
        os.utime(path.parent, (1_000_000 + k, 1_000_000 + k))  # stored in this order
        paths.append(path)
    assert new and all(p.is_file() for p in paths)  # 3 MB: at the limit
    assert probe_upload.save_upload("f0.conllu", bytes([0]) * 2**20) == (paths[0], False)  # f0 used again: newest
    newest, _ = probe_upload.save_upload("f3.conllu", bytes([3]) * 2**20)
    assert newest.is_file() and paths[0].is_file() and paths[2].is_file()
    assert not paths[1].parent.exists()  # the least recently used one went, and only it


def test_test_labels_training_never_has_are_said_beside_the_result(data_root, cache):
    """The warning that a test file's labels never occur in training (row 351) reached the command line only: the
    upload tab showed its accuracy alone."""
    at = open_task("tag")
    upload(at, "tag", "train", "ewt-train.conllu", ewt_bytes(data_root, "train", 40))
    test = ewt_bytes(data_root, "test", 20).replace(b"\tNOUN\t", b"\tZZZ\t", 1)
    upload(at, "tag", "test", "ewt-test.conllu", test)
    at.run()
    at.selectbox(key="up_model").set_value("glove-6b-50d")
    at.button(key="up_run").click().run()
    assert_ok(at)
    assert re.search(r"1 of the test file's [\d,]+ labels \('ZZZ'\) never occur in training", texts(at.warning))
