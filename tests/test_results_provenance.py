"""Every committed result in use was produced by the model that ships (content fingerprints, issue 17).

A stale row — written by weights other than those in assets/ or the pip packages — is caught by
``python -m probes reproduce --verify``: on toy result folders here, and on docs/results itself.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from models.registry import load_embedder
from probes.reporting.verify import results_in_use, verify_results
from probes.result_names import as_named_now
from probes.results import ProbeResult, content_digest, latest_rows, read_results, save_result

REPO = Path(__file__).resolve().parent.parent


def _result(model: str, fingerprint: str | None, value: float, stamp: str) -> ProbeResult:
    return ProbeResult(
        model,
        "pos",
        [{"dataset": "conll2000", "layer": "0", "metric": "accuracy", "value": value, "n": 10}],
        dataset="conll2000",
        fingerprint=fingerprint,
        timestamp=stamp,
    )


def test_only_results_in_use_are_checked_and_a_stale_one_is_named(tmp_path):
    current = load_embedder("glove-6b-50d").fingerprint()
    save_result(_result("glove-6b-50d", "0ld0ld0ld0ld0ld0", 50.0, "2026-01-01T00:00:00"), tmp_path)  # superseded
    save_result(_result("glove-6b-50d", current, 51.0, "2026-02-01T00:00:00"), tmp_path)
    save_result(_result("majority-tag", None, 40.0, "2026-02-01T00:00:00"), tmp_path)  # a baseline
    results = read_results(tmp_path)
    assert len(results) == 3
    in_use = results_in_use(results)
    assert [(r.model, r.rows[0]["value"], n) for r, n in in_use] == [
        ("glove-6b-50d", 51.0, 1),
        ("majority-tag", 40.0, 1),
    ]
    fingerprint_of = lambda m: current if m == "glove-6b-50d" else None
    checks = verify_results(tmp_path, fingerprint_of)
    assert [(c.model, c.ok) for c in checks] == [("glove-6b-50d", True), ("majority-tag", True)]  # rows: digest
    # A newer row from other weights takes over the table: now it is reported.
    save_result(_result("glove-6b-50d", "beefbeefbeefbeef", 52.0, "2026-03-01T00:00:00"), tmp_path)
    checks = verify_results(tmp_path, fingerprint_of)
    assert [(c.model, c.recorded, c.ok) for c in checks] == [
        ("majority-tag", None, True),
        ("glove-6b-50d", "beefbeefbeefbeef", False),
    ]


def test_verify_command_exit_status(tmp_path):
    runs = tmp_path / "out" / "runs"
    save_result(_result("glove-6b-50d", "beefbeefbeefbeef", 52.0, "2026-03-01T00:00:00"), runs)
    cmd = [sys.executable, "-m", "probes", "reproduce", "--verify", "--out"]
    stale = subprocess.run(cmd + [str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert stale.returncode == 1 and "stale: glove-6b-50d" in stale.stdout
    missing = subprocess.run(cmd + [str(tmp_path / "nowhere")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "no results folder" in missing.stderr


def test_committed_results_were_produced_by_the_shipped_models():
    out = subprocess.run(
        [sys.executable, "-m", "probes", "reproduce", "--verify", "--out", "docs/results"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " 0 of " not in out.stdout
    assert "stale" not in out.stdout  # baselines (no model, no fingerprint) are not called stale


def test_a_folders_version_changes_when_a_result_is_written_replaced_or_removed(tmp_path: Path) -> None:
    """The app's caches of a results folder key on ``folder_version`` (issue 30: no 30 s expiry, no stale rows)."""
    from viz.results import folder_version, load_dir

    assert folder_version(tmp_path / "missing") == ()
    empty = folder_version(tmp_path)
    first = save_result(_result("m", "fp", 0.5, "20260101T000000"), tmp_path)
    one = folder_version(tmp_path)
    assert one != empty and len(one) == 1
    assert folder_version(tmp_path) == one  # reading changes nothing
    load_dir(tmp_path)
    assert folder_version(tmp_path) == one
    save_result(_result("m", "fp", 0.6, "20260101T000001"), tmp_path)
    two = folder_version(tmp_path)
    assert len(two) == 2 and two != one
    Path(first).write_text(Path(first).read_text().replace("0.5", "0.7"))  # rewritten in place
    assert folder_version(tmp_path) != two
    Path(first).unlink()
    assert len(folder_version(tmp_path)) == 1


def test_a_run_of_a_changed_model_never_lends_its_layers_to_the_newest_runs_row(tmp_path, caplog):
    """A model's weights replaced at the same name: its newest run (one layer) and an earlier run of the old weights
    (three layers) were merged into one table row, and a claim compared layer 1 (new) with layer 2 (old)."""

    def run(fingerprint: str, layers: dict[str, float], stamp: str) -> ProbeResult:
        rows = [
            {"dataset": "conll2000", "layer": k, "metric": "accuracy", "value": v, "n": 10} for k, v in layers.items()
        ]
        return ProbeResult("tb", "pos", rows, dataset="conll2000", fingerprint=fingerprint, timestamp=stamp)

    old = run("7e4fbbb5", {"0": 35.42, "1": 35.83, "2": 33.89}, "2026-12-01T00:00:00+00:00")
    new = run("0e296f5e", {"1": 31.11}, "2026-12-01T01:00:00+00:00")
    baseline = ProbeResult(
        "majority-tag", "pos", old.rows[:1], dataset="conll2000", timestamp="2026-12-01T00:00:01+00:00"
    )
    with caplog.at_level("INFO", logger="probes.results"):
        df = latest_rows([old, baseline, new])
    assert df[df.model == "tb"][["layer", "value"]].values.tolist() == [["1", 31.11]]
    assert df[df.model == "majority-tag"].value.tolist() == [35.42]  # no fingerprint: never left out
    assert "tb pos: 1 run(s) of an earlier version of the model (fingerprint 7e4fbbb5) left out" in caplog.text
    # the same model again (same fingerprint): its runs add up as before
    assert sorted(latest_rows([old, run("7e4fbbb5", {"1": 36.0}, "2026-12-01T02:00:00+00:00")]).value) == [
        33.89,
        35.42,
        36.0,
    ]


def test_an_unreadable_newest_result_is_named_not_silently_replaced(tmp_path, caplog):
    """A truncated newest run let an older run's numbers stand in for it without a word."""
    older = save_result(_result("minilm", "f1", 90.0, "2026-12-01T00:00:00+00:00"), tmp_path)
    newest = save_result(_result("minilm", "f1", 95.0, "2026-12-01T01:00:00+00:00"), tmp_path)
    newest.write_bytes(newest.read_bytes()[:40])
    with caplog.at_level("WARNING", logger="probes.results"):
        assert [r.rows[0]["value"] for r in read_results(tmp_path)] == [90.0]
    assert f"{newest}: not a readable result file" in caplog.text and str(older) not in caplog.text


def test_a_json_file_that_is_not_a_result_object_is_left_out_with_its_name(tmp_path, caplog):
    """``[1, 2]`` or ``null`` in a results folder (valid JSON, not an object) raised AttributeError in every reader:
    ``probes compare``, ``reproduce --tables-only`` and the app's Probes, Layer profile and Reproduce pages."""
    kept = save_result(_result("minilm", "f1", 90.0, "2026-12-01T00:00:00+00:00"), tmp_path)
    for name, text in (("list.json", "[1, 2]"), ("null.json", "null"), ("text.json", '"a result"')):
        (tmp_path / name).write_text(text, encoding="utf-8")
    with caplog.at_level("WARNING", logger="probes.results"):
        assert [r.rows[0]["value"] for r in read_results(tmp_path)] == [90.0]
    assert all(
        f"{name}.json: not a readable result file (TypeError: a JSON" in caplog.text for name in ("list", "null")
    )
    assert str(kept) not in caplog.text


def test_a_training_slice_never_stands_in_for_the_full_run(tmp_path):
    """``--limit`` runs were kept apart (row 15), but ``wsd --semcor-limit 100`` (trained on SemCor's first 100
    sentences) and ``mix --train-limit 5`` were not: the newer slice replaced the full run in every table, its
    baselines too, under the plain title. A training slice is now a slice like any other."""
    from probes.reporting.tables import build_tables, titles

    def wsd(value: float, stamp: str, semcor_limit: int | None, model: str = "glove") -> ProbeResult:
        rows = [{"dataset": "ALL", "layer": "0", "metric": "F1", "value": value, "n": 7253}]
        params = {"limit": None, "semcor_limit": semcor_limit}
        return ProbeResult(model, "wsd", rows, dataset="ALL", params=params, timestamp=stamp)

    full, part = wsd(51.91, "2026-12-01T00:00:00+00:00", None), wsd(63.96, "2026-12-02T00:00:00+00:00", 100)
    df = latest_rows([full, part])
    assert dict(zip(df.dataset, df.value)) == {"ALL": 51.91, "ALL (semcor-limit 100)": 63.96}
    both = ProbeResult("m", "mix", [{"dataset": "d", "layer": "last", "metric": "accuracy", "value": 1.0}])
    sliced = latest_rows([dataclasses.replace(both, params={"limit": 80, "train_limit": 5})])
    assert list(sliced.dataset) == ["d (limit 80, train-limit 5)"]
    for res in (full, part):
        save_result(res, tmp_path)
    tables = build_tables(tmp_path)
    assert "wsd (semcor-limit 100)" in tables and "63.96" not in tables["wsd"].to_string()
    assert titles(tables)["wsd (semcor-limit 100)"].endswith(
        "runs with --semcor-limit 100: a slice of the data, kept apart from the full runs"
    )


def test_every_training_slice_is_an_option_of_a_probe():
    """``TRAINING_SLICES`` names options the probes define (one fact in two places, kept together by this test)."""
    from probes.registry import all_probes
    from probes.results import TRAINING_SLICES

    options = {o.name: o.flag for spec in all_probes() for o in spec.options}
    assert all(options.get(name) == f"--{flag}" for name, flag in TRAINING_SLICES.items()), options


def test_a_killed_saves_temporary_is_removed_by_the_next_save_and_a_live_writers_is_kept(tmp_path):
    """A result written to ``.NAME.RANDOM.tmp`` and killed before its link stayed in the results folder for good."""
    from corpora.temps import HOST, process_start

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its PID is free
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead_tmp = tmp_path / f".m__pos__1.{HOST}-{gone.pid}-1.abcdefgh.tmp"
        live_tmp = tmp_path / f".m__pos__2.{HOST}-{live.pid}-{process_start(live.pid)}.abcdefgh.tmp"
        for path in (dead_tmp, live_tmp):
            path.write_text("{")
        saved = save_result(_result("m", None, 0.5, "2026-01-01T00:00:00+00:00"), tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([saved.name, live_tmp.name])
    finally:
        live.kill()
        live.wait()


def test_files_of_earlier_versions_read_under_todays_names_and_never_stand_in_for_a_default_run(tmp_path):
    """Before 2026-11-24 an MLP run was saved as "pos" (its family only in params): the linear table showed its
    73.10 for GloVe's layer 0, whose linear run gave 63.14; before 2026-11-28 rank-8 structural and endpoint-pooled
    span runs were saved as ":tree" and ":span" and headed as the defaults, the newer replacing the default run.
    Such files now read as today's writer names them, and their digests still verify."""
    from probes.reporting.tables import build_tables

    stamp = "2026-11-20T00:00:00+00:00"

    def old(probe: str, dataset: str, value: float, **params) -> ProbeResult:
        row = {"dataset": dataset, "layer": "0", "metric": "accuracy", "value": value, "n": 2012}
        return ProbeResult("glove", probe, [row], dataset="d", params={"limit": None, **params}, timestamp=stamp)

    for result in (
        old("pos", "conll2000-test:pos", 63.14),
        old("pos", "conll2000-test:pos", 73.10, probe_family="mlp-64", control=False, mdl=False),
        old("structural", "ewt:test:tree", 70.0),
        old("structural", "ewt:test:tree", 80.0, rank=8, epochs=6),
        old("span", "t@1:test:span", 60.0, pooling="mean"),
        old("span", "t@1:test:span", 90.0, pooling="endpoints"),
    ):
        save_result(result, tmp_path)
    read = {(r.probe, r.rows[0]["dataset"]): r.rows[0]["value"] for r in read_results(tmp_path)}
    assert read == {
        ("pos", "conll2000-test:pos"): 63.14,
        ("pos+mlp-64", "conll2000-test:pos"): 73.10,
        ("structural", "ewt:test:tree"): 70.0,
        ("structural", "ewt:test:tree (rank 8)"): 80.0,
        ("span", "t@1:test:span"): 60.0,
        ("span", "t@1:test:span (endpoints pooling)"): 90.0,
    }
    tables = build_tables(tmp_path)
    assert "73.1" not in tables["pos"].to_string() and "63.14" in tables["pos"].to_string()
    assert all(r.digest == content_digest(r) for r in read_results(tmp_path))  # re-signed, as their files held
    # an old chain baseline recorded no settings: its own command names them (a reproduce line's --rank is POS's)
    row = {"dataset": "ewt:test:tree", "layer": "baseline", "metric": "UUAS", "value": 43.0}
    chain = ProbeResult("chain-baseline", "structural", [row], command="python -m probes structural --epochs 4")
    assert as_named_now(chain, content_digest).rows[0]["dataset"] == "ewt:test:tree (4 epochs)"
    other = dataclasses.replace(chain, command="python -m probes reproduce --probes pos,structural --rank 5")
    assert as_named_now(other, content_digest) is other


def test_an_interval_saved_before_units_were_stated_says_what_it_resamples(tmp_path):
    """A WSD or POS row of before 2026-11-26 has an interval over test instances but no unit: its tables said
    "CI over n/a" and its chart "95% intervals", beside rows whose intervals resample documents."""
    from probes.reporting.tables import build_tables
    from probes.stats.units import UNSTATED_UNIT
    from viz.probe_figures import interval_note

    rows = [
        {"dataset": d, "layer": "0", "metric": "F1", "value": 64.0, "n": 2824, "lo": 62.04, "hi": 65.62}
        for d in ("ALL", "ALL-noSE07")
    ]
    save_result(
        ProbeResult("glove", "wsd", rows, dataset="semcor→ALL", timestamp="2026-11-20T00:00:00+00:00"), tmp_path
    )
    pos = {"dataset": "conll2000-test:pos", "layer": "0", "metric": "accuracy", "value": 63.1, "lo": 62.0, "hi": 64.0}
    save_result(ProbeResult("glove", "pos", [pos], timestamp="2026-11-20T00:00:00+00:00"), tmp_path)
    tables = build_tables(tmp_path)
    assert list(tables["wsd"]["CI over"]) == [UNSTATED_UNIT] and list(tables["pos"]["CI over"]) == [UNSTATED_UNIT]
    df = latest_rows(read_results(tmp_path))
    assert interval_note(df[df.probe == "wsd"]) == f"95% CI over {UNSTATED_UNIT}"


def test_a_result_of_the_model_at_any_precision_it_runs_at_here_is_the_shipped_models(tmp_path):
    """On a GPU machine ``--verify`` loaded each model on the GPU in half precision, whose fingerprint is its own:
    every committed (CPU, float32) result read "stale". It now takes the fingerprints of the model on the CPU and, where
    there is a GPU, as loaded there; a result matching either is the shipped model's, one matching neither is not."""
    save_result(_result("glove-6b-50d", "a" * 16, 51.0, "2026-02-01T00:00:00"), tmp_path)
    assert verify_results(tmp_path, lambda m: ("b" * 16, "a" * 16))[0].ok
    stale = verify_results(tmp_path, lambda m: ("b" * 16, "c" * 16))[0]
    assert not stale.ok and stale.current == "b" * 16
