"""A full disk wherever the lab writes (docs/reliability.md, round twelve: an audit with small tmpfs mounts): one
clear line, no file cut short and read later as whole, nothing earlier lost, no temporary left. A full disk is
played here by the moment it is found: ``fsync`` (a buffered write) or the move into place failing with ENOSPC."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import corpora.temps
from corpora.errors import LabError, RequestError

RUNS = Path(__file__).resolve().parent.parent / "docs" / "results" / "runs"


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def fills_after(n: int):
    """An ``fsync`` that works ``n`` times, then finds the disk full."""
    left = [n]
    real = os.fsync

    def fsync(fd):
        if left[0] <= 0:
            disk_full()
        left[0] -= 1
        return real(fd)

    return fsync


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_tables_on_a_full_disk_leave_every_file_whole_and_the_markdown_as_it_was(tmp_path, monkeypatch):
    """``reproduce --tables-only`` wrote each table in place: a full disk cut ``tables.md`` mid-sentence (the old one
    gone) or left a 0-byte CSV, with new CSVs beside the old Markdown, and ended in a traceback."""
    from probes.reporting.tables import write_tables

    out = tmp_path / "rep"
    write_tables(RUNS, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(corpora.temps.os, "fsync", fills_after(3))
    with pytest.raises(LabError, match=r"Could not write .* \(No space left on device\): the files of .* written"):
        write_tables(RUNS, out)
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before and not leftovers(tmp_path)  # the same tables here: each file whole, none cut


def test_a_key_file_on_a_full_disk_is_never_cut_and_an_older_one_stays(tmp_path, monkeypatch):
    """A WSD ``--keys`` file was written in place: 8,192 bytes cut mid-line (Scorer.java would score it), an older
    complete one truncated by a rerun."""
    from probes.errors import ProbeInputError
    from probes.tasks.wsd.scoring import write_key_file

    path = write_key_file(tmp_path / "m.key.txt", ["d1.s1.t1", "d1.s1.t2"], ["bank%1:14:00::", None])
    monkeypatch.setattr(corpora.temps.os, "fsync", disk_full)
    with pytest.raises(ProbeInputError, match="cannot write the key file .*an older one there is as it was"):
        write_key_file(path, ["x"] * 1000, ["y"] * 1000)
    assert path.read_text() == "d1.s1.t1 bank%1:14:00::\n" and not leftovers(tmp_path)


def test_key_files_that_find_the_disk_full_cost_the_keys_not_the_runs_results(tmp_path, monkeypatch, capsys):
    """A failed ``--keys`` write ended the WSD run with an error and saved none of its results (a full run's
    minutes lost for a by-product); now the results are saved and a warning names the files not written."""
    import probes.tasks.wsd.scoring as scoring
    from probes.__main__ import main

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(scoring, "write_atomically", disk_full)
    results, keys = tmp_path / "results", tmp_path / "keys"
    argv = ["wsd", "--model", "glove-6b-50d", "--limit", "5", "--keys", str(keys), "--results", str(results)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "glove-6b-50d-layer0.key.txt not written" in err and "wordnet-first-sense.key.txt not written" in err
    assert "No space left on device" in err and "The run went on without them" in err and "Traceback" not in err
    saved = sorted(p.name.split("_")[0] for p in results.rglob("*.json"))
    assert saved == ["glove-6b-50d", "semcor-mfs", "wordnet-1st-sense"], saved  # the file-name form
    assert not list(keys.iterdir())


def test_the_registry_on_a_full_or_frozen_disk_is_one_error_line(tmp_path, monkeypatch, capsys):
    """``models add`` / ``remove`` on a full disk or a folder made immutable: an OSError traceback."""
    from models.__main__ import main
    from models.assets import ASSETS

    registry = tmp_path / "embprobe.toml"
    monkeypatch.setenv("EMBPROBE_MODELS", str(registry))
    assert main(["add", "a", str(ASSETS / "word2vec-sg")]) == 0
    before = registry.read_bytes()
    monkeypatch.setattr("models.user_registry.os.replace", disk_full)
    assert main(["add", "b", str(ASSETS / "word2vec-sg")]) == 2
    err = capsys.readouterr().err
    assert "cannot write the model registry (No space left on device); it is as it was" in err
    assert "Traceback" not in err and registry.read_bytes() == before and not leftovers(tmp_path)


def test_a_training_checkpoint_or_a_model_folder_on_a_full_disk_is_one_error_and_no_leftover(tmp_path, monkeypatch):
    """GPT's checkpoint on a full disk: torch's "unexpected pos 420736 vs 420628" traceback and a 614 KB
    ``checkpoint.tmp`` left; a trained model's folder: an OSError traceback after the training."""
    import torch

    from models.assets import writing_folder
    from models.train.common import save_checkpoint

    monkeypatch.setattr(torch, "save", lambda obj, f: (Path(f).write_bytes(b"partial"), disk_full()))
    with pytest.raises(RequestError, match="Could not write the training checkpoint .*--resume goes on from it"):
        save_checkpoint(tmp_path / "checkpoint.pt", {"step": 1})
    assert not list(tmp_path.iterdir())
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model_card.json").write_text("{}")
    expected = pytest.raises(RequestError, match="Could not write the model to .* the folder is as it was")
    with expected, writing_folder(tmp_path / "m") as folder:
        (folder / "vectors.bin").write_bytes(b"x")
        disk_full()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"] and os.listdir(tmp_path / "m") == ["model_card.json"]


def test_the_digest_memo_on_a_full_disk_leaves_no_temporary(tmp_path, monkeypatch):
    """Its ``mkstemp`` temporaries (0600, no writer in their names) were left for good on a full cache disk."""
    from corpora.digests import file_digests

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data.txt"
    data.write_text("some bytes")
    monkeypatch.setattr(os, "replace", disk_full)  # the memo's move into place finds the disk full
    assert len(file_digests([data])) == 1  # the digest is computed; only its memo is not kept
    assert not leftovers(tmp_path)


def test_a_full_store_keeps_the_entry_as_it_was_and_leaves_no_unfinished_version(tmp_path):
    """A push to a full shared store left a partial ``v-…`` folder that ``verify`` never named, and failed the
    sweep task whose result was already computed."""
    import uuid

    import fsspec

    from cluster.storage import Store, push_entry
    from features import FeatureCacheError
    from features.extract import get_features
    from tests.probe_helpers import RandomEmbedder

    store = Store(f"memory://embprobe-{uuid.uuid4().hex[:8]}")
    feats = get_features(
        RandomEmbedder(num_layers=3, dim=8), "toy", [["a", "b"]] * 20, root=tmp_path, show_progress=False
    )
    put = store.fs.put_file
    calls = []

    def fills_on_the_second(src, dst, **kwargs):
        calls.append(dst)
        if len(calls) > 1:
            disk_full()
        return put(src, dst, **kwargs)

    store.fs.put_file = fills_on_the_second
    try:
        with pytest.raises(FeatureCacheError, match="Could not publish .* the store's entry is as it was"):
            push_entry(store, feats.directory)
        assert not store.fs.exists(calls[0].rsplit("/", 1)[0])  # the unfinished version is gone
    finally:
        store.fs.put_file = put
        fs = fsspec.filesystem("memory")
        if fs.exists(store.url):
            fs.rm(store.url, recursive=True)


def test_a_sweep_whose_results_disk_fills_is_one_error_line(tmp_path, monkeypatch, capsys):
    """``probes sweep`` with its results folder full: a traceback through the executor (the single-probe commands
    had said it in one line since row 190); ``--resume`` then goes on."""
    from probes.__main__ import main

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("cluster.sweep.save_result", disk_full)
    argv = ["sweep", "--models", "glove-6b-50d", "--probes", "pos", "--limit", "12", "--results", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: The results could not be saved in" in err and "No space left on device" in err
    assert "Traceback" not in err


def test_an_upload_or_a_parsed_corpus_on_a_full_disk_leaves_no_folder_and_says_why_it_is_slow(
    tmp_path, monkeypatch, caplog
):
    """A failed upload store left an empty ``uploads/<hash>/`` folder; the reader cache stopped caching on a full disk
    without a word (every run parsed SemCor again)."""
    import logging

    from app_pages.probe_upload import save_upload
    from corpora.cache import cached

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(LabError, match="Could not store the upload 'x.conllu'"):
        save_upload("x.conllu", b"1\tword\n")
    assert not list((tmp_path / "cache" / "uploads").iterdir())
    with caplog.at_level(logging.WARNING, logger="corpora.cache"):
        assert cached("toy", 1, {"p": 1}, lambda: {"a": 1}) == {"a": 1}
    assert "Could not cache toy" in caplog.text and "parsed again on each run" in caplog.text


def test_a_wsd_run_stopped_half_way_leaves_no_key_file_of_its_own(tmp_path, monkeypatch, capsys):
    """``--keys`` files were written layer by layer: a run stopped after layer 1 (Ctrl-C, a scheduler) left its
    layers 0–1 beside an older run's 2–6 in one folder, nothing telling them apart (an audit of interrupts). A
    result's key files are now written together when it is done."""
    import probes.tasks.wsd.scoring as scoring
    from probes.__main__ import main

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    real, calls = scoring.KeyFiles.write, []

    def stop_at_the_second_layer(self, name, ids, predictions):
        calls.append(name)
        if sum(c.startswith("minilm-") for c in calls) == 2:
            raise KeyboardInterrupt
        real(self, name, ids, predictions)

    monkeypatch.setattr(scoring.KeyFiles, "write", stop_at_the_second_layer)
    keys = tmp_path / "keys"
    argv = ["wsd", "--model", "minilm", "--limit", "3", "--semcor-limit", "50", "--keys", str(keys), "-q"]
    assert main([*argv, "--results", str(tmp_path / "results")]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not [p.name for p in keys.glob("minilm-*")]  # the baselines' own runs finished: theirs are whole
