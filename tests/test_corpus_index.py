"""The corpus index built ahead and in the background (issue 30): ``python -m features index``,
``features.background`` (one builder per entry, its progress on disk) and the corpus panel of the
Polysemy and Embedding space pages (``app_pages.corpus_ui``), which never waits for a build.

A tiny BERT (``models.tiny``) indexes the first few SemCor sentences (``--limit`` /
``$EMBPROBE_CORPUS_LIMIT``), each test another slice so that its index starts cold. The app's builds are
real child processes (``python -m features index``). The panel tests failed on the code before the
fix: its button built the index in the foreground (all of SemCor: far beyond the runs' time limit).
"""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest
from filelock import FileLock
from streamlit.testing.v1 import AppTest

from features import has_layers, read_meta
from features.background import BUILD_FILE, BUILD_LOCK, BuildBusy, build_entry, build_status
from features.store import feature_dir
from models.registry import load_embedder
from models.tiny import make_tiny_checkpoint
from tests.probe_helpers import RandomEmbedder

RUN_S = 120  # one AppTest run (a busy 2-core machine); the panel itself answers in about a second
BUILD_S = 300  # a child process: python, torch, SemCor's first slice, the tiny model


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    return str(make_tiny_checkpoint("bert", tmp_path_factory.mktemp("models") / "tiny-bert", layers=2, hidden=32))


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")  # one per module: SemCor is parsed into it once


@pytest.fixture()
def cache(cache_root, tiny_bert, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(cache_root))
    monkeypatch.setenv("INDEX_TEST_MODEL", tiny_bert)
    return cache_root


def panel_script() -> None:
    """The corpus panel as both pages call it: model, layer, a query vector (AppTest runs this alone)."""
    import os

    import numpy as np

    from app_pages.corpus_ui import corpus_panel

    corpus_panel(os.environ["INDEX_TEST_MODEL"], 1, np.linspace(-1, 1, 32, dtype=np.float32), key="t")


def open_panel(limit: int, monkeypatch) -> AppTest:
    monkeypatch.setenv("EMBPROBE_CORPUS_LIMIT", str(limit))
    return AppTest.from_function(panel_script, default_timeout=RUN_S).run()


def infos(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in at.info)


def progress_texts(at: AppTest) -> list[str]:
    return [e.proto.text for e in at.get("progress")]


def timed_run(at: AppTest) -> float:
    t0 = time.perf_counter()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return time.perf_counter() - t0


def test_the_command_builds_a_tiny_index_once(cache, tiny_bert, capsys) -> None:
    from corpora.semcor import load_semcor
    from features.__main__ import main
    from viz.corpus_search import corpus_index

    assert main(["index", "--model", tiny_bert, "--limit", "30"]) == 0
    out = capsys.readouterr().out
    assert "building the corpus index (semcor-tagged-limit30)" in out and "words/s" in out, out
    emb = load_embedder(tiny_bert)
    assert has_layers(emb, "semcor-tagged-limit30", range(emb.num_layers))
    directory = feature_dir(emb.fingerprint(), "semcor-tagged-limit30")
    assert not (directory / BUILD_FILE).exists()  # a finished build leaves no progress behind
    assert build_status(emb.fingerprint(), "semcor-tagged-limit30") is None
    # the rows are the page's corpus rows: one per sense-tagged token of the first 30 sentences (pieces pooled)
    pieces = read_meta(directory)["num_rows"]
    assert pieces >= len(corpus_index(load_semcor()[0][:30])) > 100
    assert main(["index", "--model", tiny_bert, "--limit", "30"]) == 0
    assert "is already built" in capsys.readouterr().out
    assert main(["index", "--model", "no-such-model", "--limit", "30"]) == 2
    assert "error: Unknown model" in capsys.readouterr().err
    assert main(["index", "--limit", "0"]) == 2


def test_the_command_stores_the_layer_asked_for_when_the_disk_cannot_hold_every_layer(
    cache, tiny_bert, capsys, monkeypatch
) -> None:
    import shutil
    from collections import namedtuple

    from app_pages import corpus_ui
    from features import DISK_SHARE, stored_layers
    from features.__main__ import main
    from probes.tasks.wsd.sources import builtin_train

    emb, split = load_embedder(tiny_bert), builtin_train(12)
    per_layer = len(split.keep) * emb.dim * 2  # float16 rows
    usage, real = namedtuple("usage", "total used free"), shutil.disk_usage
    monkeypatch.setattr(
        shutil, "disk_usage", lambda path: usage(real(path).total, 0, int(1.5 * per_layer / DISK_SHARE))
    )
    assert main(["index", "--model", tiny_bert, "--limit", "12"]) == 2  # every layer, no room: refused, said why
    assert "is free in" in capsys.readouterr().err
    assert main(["index", "--model", tiny_bert, "--limit", "12", "--layers", "x"]) == 2
    assert "--layers 'x'" in capsys.readouterr().err
    assert main(["index", "--model", tiny_bert, "--limit", "12", "--layers", "0,3"]) == 2
    assert "layers 0..2" in capsys.readouterr().err
    assert main(["index", "--model", tiny_bert, "--limit", "12", "--layers", "0"]) == 0
    assert "built (layers 0 only" in capsys.readouterr().out
    key = split.feature_key
    assert has_layers(emb, key, [0]) and not has_layers(emb, key, [1]) and not has_layers(emb, key, [2])
    assert main(["index", "--model", tiny_bert, "--limit", "12", "--layers", "0"]) == 0
    assert "is already built" in capsys.readouterr().out
    assert stored_layers(emb, key) == [0]
    # The panel at layer 1 says what the index holds and offers that layer; the build (a child process, the
    # real disk) adds layers 1 and 2 beside the stored layer 0, which is neither dropped nor written again.
    layer0 = (feature_dir(emb.fingerprint(), key) / "layer_0.npy").stat().st_mtime_ns
    at = open_panel(12, monkeypatch)
    assert "holds layer 0 only" in infos(at) and "Layer 1 needs SemCor embedded again" in infos(at)
    assert at.button(key="t_build").label == f"Build layer 1 of the SemCor index for {tiny_bert}"
    at.button(key="t_build").click()
    assert timed_run(at) < 30 and progress_texts(at)
    corpus_ui.wait_for_builds(BUILD_S)
    at.run()
    assert not at.exception and not at.error and not at.info and len(at.dataframe[-1].value) == 20
    assert has_layers(emb, key, [0, 1, 2]) and stored_layers(emb, key) == [0, 1, 2]
    assert (feature_dir(emb.fingerprint(), key) / "layer_0.npy").stat().st_mtime_ns == layer0


def test_the_panel_builds_in_the_background_and_the_box_goes_away(cache, monkeypatch) -> None:
    from app_pages import corpus_ui

    at = open_panel(31, monkeypatch)
    assert "is not built yet" in infos(at) and "make index" in infos(at)
    at.button(key="t_build").click()
    assert timed_run(at) < 30  # the old button embedded all of SemCor here (minutes)
    assert progress_texts(at) and "Building the corpus index" in progress_texts(at)[0]
    assert "is not built yet" not in infos(at) and not at.button  # no second start offered
    assert timed_run(at) < 30  # a rerun meanwhile: the page is not held by the build
    assert progress_texts(at) and not at.dataframe
    assert len([c for c in corpus_ui._CHILDREN.values() if c.proc.poll() is None]) <= 1
    corpus_ui.wait_for_builds(BUILD_S)
    at.run()  # what the progress fragment does when the build ends
    assert not at.exception and not at.error, [e.value for e in at.exception]
    assert "is not built yet" not in infos(at) and not progress_texts(at)  # the box is gone ...
    hits = at.dataframe[-1].value
    assert {"cosine", "lemma", "sense"} <= set(hits.columns) and len(hits) == 20  # ... the search is there
    assert "nearest of" in " ".join(str(c.value) for c in at.caption)


def test_a_build_by_another_process_is_shown_and_not_started_again(cache, tiny_bert, monkeypatch) -> None:
    """A terminal's ``python -m features index`` holds the build lock: the page shows its progress, offers
    no button and starts no build of its own; when it ends, the search appears."""
    from app_pages import corpus_ui
    from probes.tasks.wsd.sources import builtin_train

    emb, split = load_embedder(tiny_bert), builtin_train(32)
    gate, started = threading.Event(), threading.Event()

    def held(fraction: float, message: str) -> None:
        started.set()
        gate.wait(BUILD_S)

    args = (emb, split.feature_key, split.layout.sentences)
    kwargs = {"keep": split.keep, "by": "python -m features index", "progress": held}
    other = threading.Thread(target=build_entry, args=args, kwargs=kwargs)
    other.start()
    try:
        assert started.wait(BUILD_S)
        at = open_panel(32, monkeypatch)
        assert progress_texts(at) and "0%" in progress_texts(at)[0], progress_texts(at)
        caption = " ".join(str(c.value) for c in at.caption).replace("\\", "")
        assert f"by another process (pid {os.getpid()}: python -m features index)" in caption, caption
        assert not at.button and "is not built yet" not in infos(at)
        assert not any(k[2] == 32 for k in corpus_ui._CHILDREN)  # no child of its own
        with pytest.raises(BuildBusy, match="already being built by python -m features index"):
            build_entry(*args, keep=split.keep, wait=False)  # the lock: a second builder is refused
    finally:
        gate.set()
        other.join(BUILD_S)
    at.run()
    assert not at.exception and not progress_texts(at) and len(at.dataframe[-1].value) == 20


class GatedEmbedder(RandomEmbedder):
    """Waits for ``gate`` before its first batch; fails at batch ``fail_at`` (None: never)."""

    def __init__(self, gate: threading.Event | None = None, fail_at: int | None = None) -> None:
        super().__init__(num_layers=2, dim=8)
        self.gate, self.fail_at = gate, fail_at

    def _embed_batch(self, sentences, with_attention):
        if self.gate is not None:
            self.gate.wait(60)
        if self.fail_at is not None and self.calls + 1 >= self.fail_at:
            raise RuntimeError("boom: the model broke half-way")
        return super()._embed_batch(sentences, with_attention)


SENTENCES = [[f"w{i}", "and", f"v{i % 7}"] for i in range(1500)]  # several chunks of 512


def test_the_lock_lets_one_builder_work_and_a_second_one_wait(tmp_path) -> None:
    gate = threading.Event()
    emb = GatedEmbedder(gate)
    first = threading.Thread(target=build_entry, args=(emb, "toy", SENTENCES), kwargs={"root": tmp_path})
    first.start()
    try:
        deadline = time.time() + 30
        while time.time() < deadline:  # the lock is taken first, then its progress file written: wait for both
            status = build_status(emb.fingerprint(), "toy", tmp_path)
            if status is not None and status.pid is not None:
                break
            time.sleep(0.05)
        assert status is not None and status.running and status.pid == os.getpid()
        # the fraction is of the words (longest sentences first: the message's sentence count lags), and says so
        assert status.text().startswith(f"{status.fraction:.0%} of the words · ")
        with pytest.raises(BuildBusy) as busy:
            build_entry(emb, "toy", SENTENCES, root=tmp_path, wait=False)
        assert busy.value.status is not None and busy.value.status.running
        assert emb.calls == 0  # the refused builder embedded nothing
    finally:
        gate.set()
        first.join(60)
    assert has_layers(emb, "toy", [0, 1], tmp_path) and build_status(emb.fingerprint(), "toy", tmp_path) is None
    calls = emb.calls
    seen = []
    build_entry(emb, "toy", SENTENCES, root=tmp_path, on_busy=seen.append)  # nobody else: served from the cache
    assert emb.calls == calls and not seen


def test_a_failed_or_killed_build_is_reported_and_nothing_partial_is_read(tmp_path) -> None:
    emb = GatedEmbedder(fail_at=2)
    with pytest.raises(RuntimeError, match="boom"):
        build_entry(emb, "toy", SENTENCES, root=tmp_path)
    assert emb.calls >= 1  # it failed half-way, after writing some rows
    status = build_status(emb.fingerprint(), "toy", tmp_path)
    assert status is not None and status.state == "failed" and "boom" in status.text()
    directory = feature_dir(emb.fingerprint(), "toy", tmp_path)
    assert read_meta(directory) is None and not has_layers(emb, "toy", [0, 1], tmp_path)
    assert not list(directory.glob("*.tmp"))  # no layer temporaries left
    # a builder killed while running: its file says "running", but nobody holds the lock
    (directory / BUILD_FILE).write_text(json.dumps({"state": "running", "fraction": 0.4, "pid": 1}))
    status = build_status(emb.fingerprint(), "toy", tmp_path)
    assert status.state == "failed" and "killed" in status.text()
    with FileLock(str(directory / BUILD_LOCK)):  # ... while one that holds it is running
        assert build_status(emb.fingerprint(), "toy", tmp_path).running
    build_entry(GatedEmbedder(), "toy", SENTENCES, root=tmp_path)  # the next build starts over and commits
    assert has_layers(emb, "toy", [0, 1], tmp_path) and build_status(emb.fingerprint(), "toy", tmp_path) is None


def test_the_panel_says_a_build_failed_and_tries_again(cache, tiny_bert, monkeypatch) -> None:
    from app_pages import corpus_ui
    from probes.tasks.wsd.sources import builtin_train

    emb, split = load_embedder(tiny_bert), builtin_train(33)

    def broken(*args, **kwargs):
        raise RuntimeError("boom: out of memory")

    with monkeypatch.context() as patch:
        patch.setattr(emb, "embed_rows", broken)
        with pytest.raises(RuntimeError):
            build_entry(emb, split.feature_key, split.layout.sentences, keep=split.keep)
    at = open_panel(33, monkeypatch)
    assert not at.exception and at.error
    message = str(at.error[0].value).replace("\\", "")  # Markdown escapes
    assert "did not finish: RuntimeError: boom: out of memory" in message and "Nothing partial is used" in message
    at.button(key="t_build").click()  # "Try again": a child build, its progress at once
    assert timed_run(at) < 30 and progress_texts(at) and not at.error
    corpus_ui.wait_for_builds(BUILD_S)
    at.run()
    assert not at.exception and not at.error and len(at.dataframe[-1].value) == 20
    assert np.isfinite(at.dataframe[-1].value["cosine"]).all()


def test_the_command_keeps_an_elmo_pair_whole() -> None:
    """``--model elmo:options.json,weights.hdf5`` (a "model name or reference", the help says) was split at its
    comma into two models that do not exist; it is one model, as ``probes`` reads it."""
    from features.__main__ import model_names

    pair = "elmo:/x/options.json,/x/weights.hdf5"
    assert model_names([pair]) == [pair]
    assert model_names([f"minilm,{pair},gpt-small", "minilm"]) == ["minilm", pair, "gpt-small"]


def test_every_time_said_in_words_has_one_format() -> None:
    """Two `duration`s said "1.5 h" (an estimate) and "1 h 05 min" (a build); one does now, and 59.7 minutes read
    "60 min" where a minute later read "1 h 00 min"."""
    from features.background import duration

    said = [duration(s) for s in (None, 0.2, 89.4, 90, 3569, 3580, 5400, 3659)]
    assert said == ["?", "1 s", "89 s", "2 min", "59 min", "1 h 00 min", "1 h 30 min", "1 h 01 min"]


def test_a_build_stopped_by_ctrl_c_or_a_signal_reads_as_stopped_not_as_an_error(tmp_path, monkeypatch) -> None:
    """The panel said "failed: KeyboardInterrupt" after a Ctrl-C in ``python -m features index`` (an audit)."""
    emb = GatedEmbedder()
    monkeypatch.setattr(emb, "embed_rows", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        build_entry(emb, "toy", SENTENCES, root=tmp_path)
    text = build_status(emb.fingerprint(), "toy", tmp_path).text()
    assert "was stopped (Ctrl-C or a signal)" in text and "KeyboardInterrupt" not in text
