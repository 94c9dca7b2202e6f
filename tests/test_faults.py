"""Fault injection for the feature cache and the result files (issue 17: nothing silently wrong,
nothing lost). Each test breaks one thing the way it breaks in practice and checks the lab notices,
says so, and gives the same numbers. docs/reliability.md maps every fault to its test here."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from corpora.digests import content_fingerprint, file_digest
from features import checks as feature_checks
from features.extract import FeatureCacheError, NonFiniteFeaturesError, get_features
from probes.results import ProbeResult, load_results, read_results, save_result
from tests.probe_helpers import RandomEmbedder

REPO = Path(__file__).resolve().parent.parent
SENTS = [["The", "bank", "closed", "."], ["He", "sat", "on", "the", "river", "bank"], [], ["Play", "!"]]
LOGGER = "features.extract"


def _expected(emb, sents, layer, dtype="float16"):
    return np.stack([emb._word_vec(w)[layer] for s in sents for w in s]).astype(dtype)


def _get(emb, root, sents=SENTS, **kw):
    return get_features(emb, "toy", sents, root=root, show_progress=False, **kw)


def _new_process():
    """What a new process would see: nothing verified yet."""
    feature_checks._VERIFIED.clear()


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name != ".lock"}


class PoisonEmbedder(RandomEmbedder):
    """RandomEmbedder whose ``layer`` holds ``value`` (NaN, inf, or a number too big for float16)."""

    def __init__(self, value, layer=1, **kw):
        super().__init__(**kw)
        self.value, self.layer = value, layer

    def _embed_batch(self, sentences, with_attention):
        outs = super()._embed_batch(sentences, with_attention)
        for out in outs:
            out.vectors[self.layer, :, 0] = self.value
        return outs


# 1. Same-size corruption -------------------------------------------------------------------------


def test_same_size_corruption_is_detected_and_rebuilt(tmp_path, caplog):
    emb = RandomEmbedder()
    f = _get(emb, tmp_path)
    path = f.directory / "layer_1.npy"
    del f
    data = bytearray(path.read_bytes())
    header = len(data) - 12 * emb.dim * 2
    data[header:] = np.random.default_rng(0).bytes(len(data) - header)  # header intact, same size
    path.write_bytes(bytes(data))
    _new_process()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        g = _get(emb, tmp_path)
    assert emb.calls == 2
    assert "layer_1.npy checksum mismatch" in caplog.text and "rebuilding" in caplog.text
    np.testing.assert_array_equal(np.asarray(g.layer(1)), _expected(emb, SENTS, 1))


def test_each_layer_file_is_verified_once_per_process(tmp_path, monkeypatch):
    emb = RandomEmbedder()
    _get(emb, tmp_path)
    meta = json.loads((tmp_path / "features" / emb.fingerprint() / "toy" / "meta.json").read_text())
    assert all(entry["checksum"].startswith("blake2b-pagewsum64:") for entry in meta["layers"].values())
    hashed = []
    real = feature_checks.file_checksum
    monkeypatch.setattr(feature_checks, "file_checksum", lambda p, **kw: hashed.append(p.name) or real(p, **kw))
    _get(emb, tmp_path)
    assert hashed == []  # written by this process: already known good
    _new_process()
    _get(emb, tmp_path)
    _get(emb, tmp_path, layers=[0])
    assert sorted(hashed) == ["layer_0.npy", "layer_1.npy", "layer_2.npy"] and emb.calls == 1


def test_cli_same_size_corruption_gives_the_same_score(tmp_path):
    """The reported fault: random bytes over a cached POS layer made the score 52.09 -> 1.02, exit 0."""
    out = tmp_path / "results"
    args = ["pos", "--model", "glove-6b-50d", "--limit", "40", "--results", str(out), "--threads", "1"]
    env = {**os.environ, "EMBPROBE_CACHE": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    run = lambda: subprocess.run(
        [sys.executable, "-m", "probes", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    first = run()
    assert first.returncode == 0, first.stderr
    acc = load_results(out).query("model == 'glove-6b-50d'").value.iloc[0]
    layer = next(tmp_path.glob("features/*/conll2000-train-limit40/layer_0.npy"))
    arr = np.load(layer, mmap_mode="r")
    offset, nbytes = arr.offset, arr.nbytes
    del arr
    with open(layer, "r+b") as fh:
        fh.seek(offset)
        fh.write(np.random.default_rng(1).bytes(nbytes))
    second = run()
    assert second.returncode == 0, second.stderr
    assert "layer_0.npy checksum mismatch" in second.stderr and "rebuilding" in second.stderr
    assert load_results(out).query("model == 'glove-6b-50d'").value.iloc[0] == acc


# 2. NaN / inf ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, dtype, message",
    [(np.nan, "float16", "NaN or inf"), (np.inf, "float32", "NaN or inf"), (1e6, "float16", "float16 range")],
)
def test_non_finite_vectors_stop_extraction_and_leave_nothing(tmp_path, value, dtype, message):
    emb = PoisonEmbedder(value)
    with pytest.raises(NonFiniteFeaturesError, match=message) as err:
        _get(emb, tmp_path, dtype=dtype)
    assert isinstance(err.value, FeatureCacheError)
    assert "random-test" in str(err.value) and "layer 1" in str(err.value) and "'toy'" in str(err.value)
    assert _files(tmp_path / "features" / emb.fingerprint() / "toy") == {}


def test_too_big_for_float16_is_fine_in_float32(tmp_path):
    f = _get(PoisonEmbedder(1e6), tmp_path, dtype="float32")
    assert f.layer(1)[0, 0] == 1e6


def test_non_finite_rebuild_keeps_the_old_entry_intact(tmp_path):
    good = RandomEmbedder()
    _get(good, tmp_path)
    directory = tmp_path / "features" / good.fingerprint() / "toy"
    before = _files(directory)
    with pytest.raises(NonFiniteFeaturesError):
        _get(PoisonEmbedder(np.nan), tmp_path, sents=[s + ["x"] for s in SENTS])  # stale: rebuild fails
    assert _files(directory) == before


def test_non_finite_values_in_a_cached_layer_are_refused(tmp_path, caplog):
    emb = RandomEmbedder()
    f = _get(emb, tmp_path, dtype="float32")
    path = f.directory / "layer_2.npy"
    del f
    arr = np.load(path, mmap_mode="r+")
    arr[3, 5] = np.nan
    arr.flush()
    del arr
    meta = json.loads((path.parent / "meta.json").read_text())  # a forged entry: checksum matches
    meta["layers"]["2"]["checksum"] = feature_checks.file_checksum(path)
    (path.parent / "meta.json").write_text(json.dumps(meta))
    _new_process()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        g = _get(emb, tmp_path, dtype="float32")
    assert "layer_2.npy holds NaN or inf" in caplog.text and emb.calls == 2
    assert np.isfinite(g.layer(2)).all()


def test_cli_reports_non_finite_vectors_as_an_error(tmp_path, monkeypatch, capsys):
    import probes.run as run_path
    from probes import cli

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    monkeypatch.setattr(run_path, "load_model", lambda name, device=None: PoisonEmbedder(np.nan))
    code = cli.main(
        ["pos", "--model", "random-test", "--limit", "5", "--results", str(tmp_path / "r"), "--threads", "1"]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines()[-1].startswith("error: random-test returned NaN or inf values at layer 1")
    assert "Traceback" not in err
    assert not list(tmp_path.glob("features/*/*/*.npy")) and not list(tmp_path.glob("features/**/*.tmp"))


def test_interrupted_commit_reads_as_absent_and_is_rebuilt(tmp_path, monkeypatch, caplog):
    """A crash between moving the new layer files into place and writing meta.json."""
    emb = RandomEmbedder()
    _get(emb, tmp_path)
    other = [s + ["new"] for s in SENTS]
    real, moved = os.replace, []

    def crash_after_one(src, dst):
        if moved:
            raise OSError(5, "Input/output error")
        moved.append(dst)
        real(src, dst)

    monkeypatch.setattr(os, "replace", crash_after_one)
    with pytest.raises(FeatureCacheError, match="Writing the feature cache"):
        _get(emb, tmp_path, sents=other)
    monkeypatch.setattr(os, "replace", real)
    directory = tmp_path / "features" / emb.fingerprint() / "toy"
    assert not (directory / "meta.json").exists() and not list(directory.glob("*.tmp"))
    g = _get(emb, tmp_path)  # layer 0 now holds `other`'s vectors: not served
    assert emb.calls == 3
    for j in range(emb.num_layers):
        np.testing.assert_array_equal(np.asarray(g.layer(j)), _expected(emb, SENTS, j))


# 3. Result files -------------------------------------------------------------------------------


def test_results_saved_in_the_same_second_never_collide_and_the_last_wins(tmp_path):
    rows = lambda v: [{"dataset": "d", "layer": "0", "metric": "accuracy", "value": v, "n": 1}]
    stamp = "2026-01-01T00:00:00+00:00"
    paths = [save_result(ProbeResult("m", "pos", rows(float(i)), timestamp=stamp), tmp_path) for i in range(20)]
    assert len(set(paths)) == 20 and all(p.name.startswith("m__pos__20260101T0000000000_") for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temporaries
    assert [r.rows[0]["value"] for r in read_results(tmp_path)] == [float(i) for i in range(20)]
    df = load_results(tmp_path)
    assert len(df) == 1 and df.value.iloc[0] == 19.0
    newer = save_result(ProbeResult("m", "pos", rows(-1.0), timestamp="2026-01-01T00:00:01+00:00"), tmp_path)
    older = save_result(ProbeResult("m", "pos", rows(-2.0), timestamp="2025-12-31T23:59:59+00:00"), tmp_path)
    assert newer.exists() and older.exists() and load_results(tmp_path).value.iloc[0] == -1.0


# 4. Crash leftovers ----------------------------------------------------------------------------

BLOCKING = textwrap.dedent(
    f"""
    import logging, sys, time
    from pathlib import Path
    import numpy as np
    from features.extract import get_features
    from tests.probe_helpers import RandomEmbedder

    logging.basicConfig(level=logging.WARNING)
    root, marker, go = map(Path, sys.argv[1:4])

    class Blocking(RandomEmbedder):      # same fingerprint as RandomEmbedder()
        def _embed_batch(self, sentences, with_attention):
            marker.write_text("extracting")
            while not go.exists():
                time.sleep(0.05)
            return super()._embed_batch(sentences, with_attention)

    emb = Blocking()
    f = get_features(emb, "toy", {SENTS!r}, root=root, show_progress=False)
    print(emb.calls, float(np.asarray(f.layer(2), dtype=np.float64).sum()))
"""
)


def _start(tmp_path, name, go, stderr=subprocess.PIPE):
    marker = tmp_path / f"{name}.started"
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKING, str(tmp_path / "cache"), str(marker), str(go)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    return proc, marker


def _wait_for(cond, proc, timeout=120):
    end = time.time() + timeout
    while not cond():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < end, "timed out"
        time.sleep(0.05)


def test_killed_extraction_leaves_temporaries_that_the_next_run_removes(tmp_path, caplog):
    proc, marker = _start(tmp_path, "a", tmp_path / "never")
    _wait_for(marker.exists, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()  # reaped: its PID is gone
    directory = tmp_path / "cache" / "features" / RandomEmbedder().fingerprint() / "toy"
    left = sorted(directory.glob("layer_*.npy.*.tmp"))
    assert len(left) == 3 and f"-{proc.pid}-" in left[0].name
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        running = directory / f"layer_0.npy.{feature_checks._HOST}-{live.pid}.abcdefgh.tmp"  # a live writer
        old_style = directory / "layer_1.x1y2z3.npy.tmp"  # before PIDs, 7 h old
        recent_old_style = directory / "layer_2.q1w2e3.npy.tmp"
        for p in (running, old_style, recent_old_style):
            p.write_bytes(b"\0" * 100)
        os.utime(old_style, (time.time() - 7 * 3600,) * 2)
        emb = RandomEmbedder()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            f = _get(emb, tmp_path / "cache")
        assert sorted(p.name for p in directory.glob("*.tmp")) == sorted([running.name, recent_old_style.name])
        assert "did not finish" in caplog.text and str(proc.pid) in caplog.text
        np.testing.assert_array_equal(np.asarray(f.layer(2)), _expected(emb, SENTS, 2))
    finally:
        live.kill()
        live.wait()


def test_a_live_writers_temporaries_stay_however_old_and_a_reused_pid_is_told_apart(tmp_path):
    """A live writer's temporaries 6 h old (a clock set back, ``touch -d``, a long write) were taken for a reused
    PID's and removed under it: its run failed ("No such file") and its work was lost. Each name now says when its
    writer started, so a live writer is told from a later process that got its PID."""
    from corpora.temps import HOST, process_start, remove_stale_temps

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        started = process_start(live.pid)
        assert started is not None  # Linux: /proc
        kept = tmp_path / f"layer_0.npy.{HOST}-{live.pid}-{started}.abcdefgh.tmp"
        reused = tmp_path / f"layer_1.npy.{HOST}-{live.pid}-{started - 1}.abcdefgh.tmp"  # the PID's earlier owner
        for path in (kept, reused):
            path.write_bytes(b"\0" * 100)
            os.utime(path, (time.time() - 7 * 3600,) * 2)
        assert remove_stale_temps(tmp_path, logging.getLogger(LOGGER)) == [reused] and kept.exists()
    finally:
        live.kill()
        live.wait()


def test_a_forked_writer_names_its_temporaries_after_itself_not_its_parent():
    """The writer's name is read once per process (it read /proc for every temporary): a fork, which inherits that
    memo, must still name its own PID and start, or its temporaries would be taken for its parent's."""
    import multiprocessing

    from corpora.temps import HOST, process_start, writer_id

    parent = writer_id()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child, child_pid, child_start = pool.apply(_writer_and_self)
    assert parent == f"{HOST}-{os.getpid()}-{process_start(os.getpid())}"
    assert child == f"{HOST}-{child_pid}-{child_start}" and child != parent


def _writer_and_self() -> tuple[str, int, int | None]:
    from corpora.temps import process_start, writer_id

    return writer_id(), os.getpid(), process_start(os.getpid())


# 5. Concurrency --------------------------------------------------------------------------------


def test_second_process_waits_for_the_first_and_reuses_its_entry(tmp_path):
    go = tmp_path / "go"
    first, marker = _start(tmp_path, "first", go)
    _wait_for(marker.exists, first)  # the first holds the lock, extracting
    log_path = tmp_path / "second.log"
    with open(log_path, "w") as log_file:
        second, _ = _start(tmp_path, "second", go, stderr=log_file)
        _wait_for(lambda: "waiting" in log_path.read_text(), second)
        meta = tmp_path / "cache" / "features" / RandomEmbedder().fingerprint() / "toy" / "meta.json"
        assert not meta.exists()
        go.write_text("go")
        out1, err1 = first.communicate(timeout=120)
        written = meta.stat().st_mtime_ns
        out2, _ = second.communicate(timeout=120)
    assert first.returncode == 0 and second.returncode == 0, (err1, log_path.read_text())
    calls1, sum1 = out1.split()
    calls2, sum2 = out2.split()
    assert int(calls1) >= 1 and calls2 == "0"  # the second did not extract
    assert sum1 == sum2 and meta.stat().st_mtime_ns == written
    assert "locked by another process" in log_path.read_text()


# 6. Odd cache states ---------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["[]", "3", "null", '"meta"', '{"layers": []}', "{not json"])
def test_meta_json_that_is_not_an_object_is_rebuilt(tmp_path, caplog, content):
    emb = RandomEmbedder()
    f = _get(emb, tmp_path)
    (f.directory / "meta.json").write_text(content)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        g = _get(emb, tmp_path)
    assert emb.calls == 2 and "rebuilding" in caplog.text
    np.testing.assert_array_equal(np.asarray(g.layer(0)), _expected(emb, SENTS, 0))
    assert json.loads((f.directory / "meta.json").read_text())["num_words"] == 12


@contextmanager
def _read_only(path: Path):
    """Make ``path`` (a directory tree) unwritable, also for root (``chattr +i``); skip where impossible."""
    paths = [path, *path.rglob("*")]
    if os.geteuid() == 0:
        if not shutil.which("chattr") or subprocess.run(["chattr", "+i", *map(str, paths)]).returncode:
            subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True)
            pytest.skip("cannot make a directory read-only for root here")
        undo = lambda: subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
    else:
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(modes[p] & ~0o222)
        undo = lambda: [p.chmod(m) for p, m in modes.items()]
    try:
        try:
            (path / "probe").touch()
        except OSError:
            pass
        else:
            (path / "probe").unlink()
            pytest.skip("the directory stayed writable")
        yield
    finally:
        undo()


def test_read_only_cache_with_a_stale_entry_computes_in_memory(tmp_path, caplog):
    emb = RandomEmbedder()
    f = _get(emb, tmp_path)
    directory = f.directory
    (directory / ".lock").unlink()  # no lock file either: it cannot be created
    before = _files(directory)
    other = [s + ["more"] for s in SENTS]
    with _read_only(tmp_path / "features"):
        _new_process()
        assert _get(emb, tmp_path).directory == directory and emb.calls == 1  # a valid entry is read
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            g = _get(emb, tmp_path, sents=other, layers=[2])
    assert "not writable" in caplog.text and g.directory is None and emb.calls == 2
    np.testing.assert_array_equal(g.layer(2), _expected(emb, other, 2))
    assert sorted(g.layers) == [2] and not g.layer(2).flags.writeable
    assert _files(directory) == before


def test_unwritable_cache_with_nothing_cached_computes_in_memory(tmp_path, caplog, monkeypatch):
    emb = RandomEmbedder()
    (tmp_path / "ro").mkdir()
    with _read_only(tmp_path / "ro"), caplog.at_level(logging.WARNING, logger=LOGGER):
        f = _get(emb, tmp_path / "ro")
    assert f.directory is None and "not writable" in caplog.text
    np.testing.assert_array_equal(f.layer(1), _expected(emb, SENTS, 1))
    (tmp_path / "file").write_text("not a directory")  # also as root: a path under a file
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "file" / "cache"))
    g = get_features(emb, "toy", SENTS, show_progress=False, dtype="float32")
    assert g.directory is None
    np.testing.assert_array_equal(g.layer(0), _expected(emb, SENTS, 0, "float32"))


def test_full_disk_when_reserving_space_computes_in_memory(tmp_path, caplog, monkeypatch):
    import errno

    from features import build

    def full(path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(build, "reserve", full)
    emb = RandomEmbedder()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        f = _get(emb, tmp_path)
    assert f.directory is None and "No space left" in caplog.text
    np.testing.assert_array_equal(f.layer(2), _expected(emb, SENTS, 2))
    assert _files(tmp_path / "features" / emb.fingerprint() / "toy") == {}


def test_same_size_edit_with_the_mtime_restored_gets_a_new_digest(tmp_path, monkeypatch):
    """Issue 27, fault 3: `touch -r` after a same-size edit kept the memoised digest (keyed by size + mtime)."""
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00" * 4096)
    before = weights.stat()
    old_digest, old_fp = file_digest(weights), content_fingerprint([weights])
    assert json.loads((tmp_path / "cache" / "file-digests.json").read_text())  # memoised
    weights.write_bytes(b"\x01" + b"\x00" * 4095)  # same size, other content
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # what `touch -r` does
    assert weights.stat().st_size == before.st_size and weights.stat().st_mtime_ns == before.st_mtime_ns
    assert file_digest(weights) != old_digest
    assert content_fingerprint([weights]) != old_fp
    assert file_digest(weights) == file_digest(weights)  # and memoised again under its new state
