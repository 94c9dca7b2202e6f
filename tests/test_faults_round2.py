"""Fault injection, round two (issue 27): each test breaks one thing the way it broke in practice and
checks the lab refuses it with one clear message, or notices it, instead of a silently wrong number.
The models users bring are tests/test_faults_models.py; docs/reliability.md maps every fault to its test."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from features import checks as feature_checks
from features.extract import get_features
from probes.reporting.verify import verify_results
from probes.results import ProbeResult, read_results, save_result
from tests.probe_helpers import RandomEmbedder

REPO = Path(__file__).resolve().parent.parent
# Fault 2: reproduce --verify checks the rows, not only fingerprints --------------------------------


def _glove_result(tmp: Path) -> Path:
    """A copy of the committed GloVe POS result that reports 75.2, alone in a runs folder."""
    src = REPO / "docs/results/runs/glove-6b-50d__pos__20261124T0318020000_a696f7.json"
    runs = tmp / "out" / "runs"
    runs.mkdir(parents=True)
    return Path(shutil.copy(src, runs / src.name))


def _verify(tmp: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "probes", "reproduce", "--verify", "--out", str(tmp / "out")]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_verify_catches_an_edited_value_and_a_removed_fingerprint(tmp_path):
    file = _glove_result(tmp_path)
    text = file.read_text(encoding="utf-8")
    assert '"value": 75.2,' in text
    data_unsigned = json.loads(text)
    assert _verify(tmp_path).returncode == 0  # as committed (digest backfilled, rows unchanged)
    file.write_text(text.replace('"value": 75.2,', '"value": 99.99,', 1), encoding="utf-8")
    edited = _verify(tmp_path)
    assert edited.returncode == 1 and "rows edited since they were saved: glove-6b-50d__pos" in edited.stdout
    from probes.reporting.restate import restate_dir

    before = file.read_bytes()
    assert restate_dir(file.parent) == 0 and file.read_bytes() == before  # an edited file is never signed again
    del data_unsigned["digest"]  # a file of before results were signed: said so, and how to sign it
    file.write_text(json.dumps(data_unsigned), encoding="utf-8")
    unsigned = _verify(tmp_path)
    assert unsigned.returncode == 1 and "unsigned (no digest: saved before 2026-11-26" in unsigned.stdout
    assert "restate_dir(" in unsigned.stdout and "rows edited" not in unsigned.stdout
    loose = subprocess.run(
        [sys.executable, "-m", "probes", "reproduce", "--verify", "--out", str(file.parent)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )  # the runs folder itself given as --out
    assert loose.returncode == 2 and "holds result files itself" in loose.stderr
    data = json.loads(text)
    data["fingerprint"] = None  # would pass for a data baseline
    file.write_text(json.dumps(data), encoding="utf-8")
    checks = verify_results(file.parent, lambda m: "f" * 16 if m == "glove-6b-50d" else None)
    assert [(c.recorded, c.rows, c.ok) for c in checks] == [(None, "edited", False)]
    del data["digest"]  # an unsigned file: the fingerprint check alone still fails it
    file.write_text(json.dumps(data), encoding="utf-8")
    checks = verify_results(file.parent, lambda m: "f" * 16 if m == "glove-6b-50d" else None)
    assert [(c.recorded, c.rows, c.ok) for c in checks] == [(None, "no digest", False)]


def test_every_committed_result_is_signed_and_its_digest_matches():
    for folder in ("runs", "ud_ewt/runs", "ud_ewt/structural_runs", "contextuality/runs"):
        checks = verify_results(REPO / "docs/results" / folder, lambda m: None)
        assert checks and all(c.rows == "ok" for c in checks), [c for c in checks if c.rows != "ok"]


def test_a_saved_result_round_trips_its_digest_with_numpy_numbers(tmp_path):
    row = {"dataset": "d", "layer": "1", "metric": "accuracy", "value": np.float32(0.1), "n": np.int64(3)}
    save_result(ProbeResult("m", "pos", [row], fingerprint="ab"), tmp_path)
    (result,) = read_results(tmp_path)
    assert verify_results(tmp_path, lambda m: "ab")[0].ok and result.digest


# Fault 4: words shuffled inside a page of a cached layer file ---------------------------------------

WORDS = [[f"w{i}" for i in range(s, s + 30)] for s in range(0, 300, 30)]  # 300 words: layer files > 2 pages


def _shuffle_page(path: Path, page: int = 1) -> None:
    """Permute the 8-byte words inside one 4 KiB page: same bytes, same size, same plain page sum."""
    data = bytearray(path.read_bytes())
    lo = page * 4096
    words = np.frombuffer(bytes(data[lo : lo + 4096]), dtype="<u8")
    data[lo : lo + 4096] = words[np.random.default_rng(0).permutation(len(words))].tobytes()
    assert data != path.read_bytes()
    path.write_bytes(bytes(data))


def test_words_shuffled_inside_a_page_are_detected_and_rebuilt(tmp_path, caplog):
    emb = RandomEmbedder()
    f = get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)
    path, want = f.directory / "layer_1.npy", np.asarray(f.layer(1)).copy()
    del f
    _shuffle_page(path)
    feature_checks._VERIFIED.clear()  # a new process
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        g = get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)
    assert "layer_1.npy checksum mismatch" in caplog.text and emb.calls == 2
    np.testing.assert_array_equal(np.asarray(g.layer(1)), want)


def test_an_entry_signed_with_the_old_page_sums_is_verified_not_rebuilt(tmp_path, caplog):
    emb = RandomEmbedder()
    f = get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)
    meta_file = f.directory / "meta.json"
    meta = json.loads(meta_file.read_text())
    for j, entry in meta["layers"].items():  # as written before issue 27
        entry["checksum"] = _plain_page_sums(f.directory / f"layer_{j}.npy")
    meta_file.write_text(json.dumps(meta, indent=1))
    del f
    feature_checks._VERIFIED.clear()
    get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)
    assert emb.calls == 1  # served from the cache: its checksums still verify
    path = next(tmp_path.glob("features/*/toy")) / "layer_2.npy"
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x10  # one changed bit is still caught by the old sums
    path.write_bytes(bytes(data))
    feature_checks._VERIFIED.clear()
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)
    assert "layer_2.npy checksum mismatch" in caplog.text and emb.calls == 2


def _plain_page_sums(path: Path) -> str:
    """The checksum entries were written with before issue 27 (BLAKE2b of plain uint64 page sums)."""
    data = path.read_bytes()
    h = hashlib.blake2b(len(data).to_bytes(8, "little"), digest_size=16)
    full = len(data) // 4096 * 4096
    h.update(np.frombuffer(data[:full], "<u8").reshape(-1, 512).sum(axis=1, dtype=np.uint64).tobytes())
    h.update(data[full:])
    return f"blake2b-pagesum64:{h.hexdigest()}"


# A --limit run is another dataset: it never replaces the full run in a table ------------------------


def test_a_limit_run_does_not_replace_the_full_run_in_tables(data_root, tmp_path):
    from probes import run_probe
    from probes.results import load_results

    files = {}
    for split, n in (("train", 60), ("test", 40)):
        src = (data_root / "ud_english_ewt" / f"en_ewt-ud-{split}.conllu").read_text(encoding="utf-8")
        files[split] = tmp_path / f"ewt-{split}.conllu"
        files[split].write_text("\n\n".join(src.split("\n\n")[:n]) + "\n\n", encoding="utf-8")
    options = {"train": str(files["train"]), "test": str(files["test"]), "column": "UPOS"}
    out = tmp_path / "results"
    kw = dict(layers="0", options=options, results_dir=out, show_progress=False, feature_root=tmp_path / "f")
    full = run_probe("tag", "glove-6b-50d", **kw)
    run_probe("tag", "glove-6b-50d", limit=10, **kw)  # newer, on the first 10 sentences of each file
    df = load_results(out)
    for res in [full.result, *full.baselines]:
        (row,) = [r for r in res.rows if r["layer"] in ("0", "baseline")]
        mine = df[(df.model == res.model) & (df.dataset == row["dataset"]) & (df.layer == row["layer"])]
        assert mine[["value", "n"]].values.tolist() == [[row["value"], row["n"]]]  # the full run still shows
        sliced = df[(df.model == res.model) & (df.dataset == f"{row['dataset']} (limit 10)")]
        assert len(sliced) == 1 and sliced.n.iloc[0] < row["n"]  # the slice: its own dataset


# Item 12: every option is checked before any extraction or write -------------------------------------


@pytest.mark.parametrize(
    "probe, model, options",
    [
        ("pos", "glove-6b-50d", {"dropout": "1.5"}),
        ("pos", "glove-6b-50d", {"weight_decay": "-1"}),
        ("pos", "glove-6b-50d", {"probe": "mlp", "hidden": "0"}),
        ("pos", "glove-6b-50d", {"probe": "bogus"}),
        ("mix", "minilm", {"rows": "foo;bar"}),  # was refused only after extracting the features
        ("pos", "glove-6b-50d", {"rank": "5"}),  # ran the linear probe, saved as another probe ("pos+linear")
        ("pos", "glove-6b-50d", {"probe": "linear", "hidden": "512"}),
        ("pos", "glove-6b-50d", {"probe": "mlp", "rank": "3"}),
    ],
)
def test_bad_options_leave_no_file(probe, model, options, tmp_path):
    from probes import run_probe
    from probes.errors import ProbeInputError

    with pytest.raises(ProbeInputError):
        run_probe(probe, model, limit=20, options=options, results_dir=tmp_path / "r", feature_root=tmp_path / "f")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("seed, seeds", [(-5, 1), (2**32 - 1, 1), (2**32 - 2, 3)])
def test_a_seed_numpy_cannot_take_is_refused_before_any_file(seed, seeds, tmp_path):
    from probes import run_probe
    from probes.errors import ProbeInputError

    kw = dict(limit=5, results_dir=tmp_path / "r", feature_root=tmp_path / "f")
    if seeds == 1 and seed >= 0:  # the largest seed numpy takes runs
        assert run_probe("pos", None, seed=seed, **kw).baselines
        return
    with pytest.raises(ProbeInputError, match="seeds run from 0 to 4294967295"):
        run_probe("pos", "glove-6b-50d", seed=seed, seeds=seeds, **kw)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--tables-only", "--models", "nosuch", "--limit", "4"],
            "the tables from the saved results; drop --models, --limit (options",
        ),
        (["--verify", "--seed", "2"], "--verify checks the saved results; drop --seed (an option of a run)"),
        (["--tables-only", "--results", "NOWHERE"], "no such folder"),
        (["--models", "nosuch"], "Unknown model 'nosuch'"),
        (["--models", "glove-6b-50d", "--limit", "-1"], "--limit -1 selects nothing"),
        (["--models", "glove-6b-50d", "--seed", "-1"], "--seed -1: seeds run from 0"),
        # a run saved in OUT/runs while --results named another folder, said nowhere
        (["--models", "glove-6b-50d", "--results", "NOWHERE"], "--results: reproduce saves its runs in OUT/runs"),
        (["--verify", "--results", "NOWHERE"], "--verify checks them there; --results names the folder --tables-only"),
    ],
)
def test_reproduce_refuses_a_bad_request_before_it_makes_its_folder(args, message, tmp_path):
    out = tmp_path / "out"
    args = [a.replace("NOWHERE", str(tmp_path / "nowhere")) for a in args]
    cmd = [sys.executable, "-m", "probes", "reproduce", "--out", str(out), *args]
    env = {**os.environ, "EMBPROBE_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_bad_mix_rows_is_one_error_line(tmp_path):
    cmd = [sys.executable, "-m", "probes", "mix", "--model", "minilm", "--rows", "foo;bar", "--limit", "20"]
    env = {**os.environ, "EMBPROBE_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(cmd + ["--results", str(tmp_path / "r")], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: Unknown row(s) ['foo', 'bar']; choose from baseline, last, all λ=1, all λ=0.001."
    ]
    assert not (tmp_path / "r").exists() and not list(tmp_path.rglob("*.npy"))


# Fault 8: a lone surrogate in span JSON is a data error with file:line, found by the reader ---------


def test_a_lone_surrogate_in_span_json_is_refused_with_file_and_line(tmp_path):
    from corpora.edge_probing import iter_edge_probing
    from corpora.format_errors import DataFormatError
    from probes import run_probe

    good = {"text": "a b c", "targets": [{"span1": [0, 1], "label": "X"}]}
    lines = [json.dumps(good), r'{"text": "a \ud800 c", "targets": [{"span1": [0, 1], "label": "X"}]}']
    path = tmp_path / "spans.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"spans\.json:2: lone surrogate U\+D800"):
        list(iter_edge_probing(path))
    out = tmp_path / "results"
    with pytest.raises(DataFormatError, match=r"spans\.json:2:"):
        run_probe("span", "glove-6b-50d", options={"train": str(path), "test": str(path)}, results_dir=out)
    assert not list(out.glob("*.json"))  # no baseline result left behind


# Fault 9: an unusable EMBPROBE_CACHE or EMBPROBE_DATA: a warning and no cache, or one clear error -----


@pytest.mark.parametrize("kind", ["file", "under a file", "dangling link", "link loop"])
def test_an_unusable_cache_directory_warns_and_computes_without_caching(kind, tmp_path, monkeypatch, caplog):
    from corpora import paths
    from corpora.cache import cached

    (tmp_path / "file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    where = {"file": "file", "under a file": "file/sub", "dangling link": "dangling", "link loop": "loop-a"}[kind]
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / where))
    paths._warn_unusable_cache.cache_clear()
    with caplog.at_level(logging.WARNING):
        assert paths.cache_dir() == tmp_path / where
        assert cached("toy", 1, {"n": 1}, lambda: {"value": 3}) == {"value": 3}
        f = get_features(RandomEmbedder(), "toy", [["a", "b"]], show_progress=False)
    assert f.directory is None and np.asarray(f.layer(1)).shape == (2, 16)  # in memory
    assert "cannot be created" in caplog.text and "nothing is cached" in caplog.text


def test_an_empty_cache_setting_is_unset_and_a_results_folder_may_start_with_a_tilde(tmp_path, monkeypatch):
    """``EMBPROBE_CACHE=`` (empty) wrote parsed corpora, features/ and results/ into the working folder, where an
    empty EMBPROBE_DATA or EMBPROBE_MODELS means unset; ``--results=~/runs`` (which bash leaves as it is) made a
    folder named "~" there."""
    from corpora import paths
    from probes.errors import writable_dir

    monkeypatch.setenv("EMBPROBE_CACHE", "")
    assert paths.cache_dir() == paths.REPO_ROOT / "cache"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert writable_dir("~/runs", "--results") == tmp_path / "home" / "runs" and not (tmp_path / "~").exists()


def test_a_data_directory_in_a_symlink_loop_is_one_clear_error(tmp_path, monkeypatch):
    from corpora.paths import DataMissingError, data_dir

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "a"))
    with pytest.raises(DataMissingError, match="Missing or unreadable data item 'data directory'"):
        data_dir()


# Fault 10: --keys that cannot be a folder is refused before the run -------------------------------


@pytest.mark.parametrize("keys", ["/proc/embprobe-keys", "FILE/sub", "FILE"])
def test_wsd_keys_that_cannot_be_a_folder_is_refused_before_anything_runs(keys, tmp_path):
    from probes import run_probe
    from probes.errors import ProbeInputError

    (tmp_path / "FILE").write_text("x")
    keys = keys.replace("FILE", str(tmp_path / "FILE"))
    with pytest.raises(ProbeInputError, match="--keys"):
        run_probe("wsd", "glove-6b-50d", limit=5, options={"keys": keys}, results_dir=tmp_path / "r")
    assert not (tmp_path / "r").exists()


# Fault 13: temporaries of killed writers are removed, in any entry, when a cache is first opened -----


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_any_entry_are_removed_when_the_caches_open(tmp_path, monkeypatch, caplog):
    from corpora import cache as reader_cache
    from corpora.temps import HOST
    from features import store

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    pid = _dead_pid()
    reader_tmp = tmp_path / f"toy-v1-abc.npz.{HOST}-{pid}.0a1b2c3d.tmp"  # a reader-cache write killed midway
    entry = tmp_path / "features" / "f00d" / "other-entry"
    entry.mkdir(parents=True)
    feature_tmp = entry / f"layer_0.npy.{HOST}-{pid}.0a1b2c3d.tmp"  # an extraction of another entry, killed
    live_tmp = entry / f"layer_1.npy.{HOST}-{os.getpid()}.0a1b2c3d.tmp"  # this process: still writing
    for path in (reader_tmp, feature_tmp, live_tmp):
        path.write_bytes(b"x" * 1000)
    reader_cache._sweep_once.cache_clear()
    store._sweep_once.cache_clear()
    with caplog.at_level(logging.WARNING):
        assert reader_cache.cached("toy", 1, {"n": 2}, lambda: [1, 2]) == [1, 2]
        get_features(RandomEmbedder(), "toy", [["a", "b"]], show_progress=False)
    assert not reader_tmp.exists() and not feature_tmp.exists() and live_tmp.exists()
    assert f"writer process {pid} is gone" in caplog.text


# Fault 7 and "Also": a symlinked registry stays a link; files get the umask's mode, not 0600 ---------


def test_a_symlinked_registry_stays_a_link_and_keeps_its_mode(tmp_path):
    from models.options import ModelOptions
    from models.user_registry import add_user_model, read_user_models

    real = tmp_path / "dotfiles" / "real.toml"
    real.parent.mkdir()
    real.write_text("# my models\n")
    real.chmod(0o640)
    link = tmp_path / "embprobe.toml"
    link.symlink_to(real)
    add_user_model("mine", "/models/bert", ModelOptions(), link)
    assert link.is_symlink() and "mine" in read_user_models(real) and "# my models" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o640


def test_cache_result_and_registry_files_follow_the_umask(tmp_path, monkeypatch):
    from corpora import cache as reader_cache
    from models.options import ModelOptions
    from models.user_registry import add_user_model

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    old = os.umask(0o022)
    try:
        result = save_result(
            ProbeResult("m", "pos", [{"dataset": "d", "layer": "0", "metric": "a", "value": 1}]), tmp_path
        )
        add_user_model("mine", "/models/bert", ModelOptions(), tmp_path / "embprobe.toml")
        reader_cache.cached("toy", 1, {"n": 3}, lambda: [3])
        f = get_features(RandomEmbedder(), "toy", [["a", "b"]], root=tmp_path / "f", show_progress=False)
        files = [result, tmp_path / "embprobe.toml", *(tmp_path / "cache").glob("toy-v1-*.npz"), *f.directory.iterdir()]
    finally:
        os.umask(old)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in files if p.name != ".lock"}
    assert len(modes) >= 6 and set(modes.values()) == {"0o644"}, modes


# Fault 6: a full disk while writing meta.json: the computed features are used, the entry rebuilt later --


def test_a_full_disk_at_meta_json_keeps_the_computed_features(tmp_path, monkeypatch, caplog):
    import errno

    from features import build

    emb = RandomEmbedder()

    def disk_full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(build, "write_atomically", disk_full)
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        f = get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)
    want = np.stack([emb._word_vec(w)[1] for s in WORDS for w in s]).astype("float16")
    np.testing.assert_array_equal(np.asarray(f.layer(1)), want)  # the run goes on with what it computed
    assert "No space left on device" in caplog.text and not (f.directory / "meta.json").exists()
    monkeypatch.undo()
    g = get_features(emb, "toy", WORDS, root=tmp_path, show_progress=False)  # not committed: rebuilt once
    assert emb.calls == 2 and (g.directory / "meta.json").exists()
    np.testing.assert_array_equal(np.asarray(g.layer(1)), want)


def test_without_a_data_directory_the_message_names_the_dataset_and_its_source(tmp_path, monkeypatch):
    """No data directory at all: the message named only "data directory" (on every page and command alike), and
    with EMBPROBE_DATA set to a missing folder it still said "Set EMBPROBE_DATA"."""
    from corpora import paths
    from corpora.paths import DataMissingError, data_path

    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path / "clone")  # no ../shared/data beside it
    monkeypatch.delenv("EMBPROBE_DATA", raising=False)
    with pytest.raises(DataMissingError) as err:
        data_path("semcor3.0/brown1/tagfiles")
    text = str(err.value)
    assert "'semcor3.0/brown1/tagfiles'" in text and "mihalcea" in text and "EMBPROBE_DATA is not set" in text
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataMissingError, match=r"EMBPROBE_DATA=.*nowhere is not a directory"):
        data_path("ud_english_ewt/en_ewt-ud-dev.conllu")
