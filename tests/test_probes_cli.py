"""``python -m probes wsd|pos|mix|reproduce``: clear errors (exit 2, no traceback), results, cache repair."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from probes.results import ProbeResult, load_extras, load_results, read_results, save_result

REPO = Path(__file__).resolve().parent.parent


def _run(args, cache: Path, timeout=300):
    env = {**os.environ, "EMBPROBE_CACHE": str(cache), "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, "-m", "probes", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["pos", "--model", "glove-6b-50d", "--layers", "3"], "out of range"),
        (["pos", "--model", "glove-6b-50d", "--layers", "two"], "Bad layer"),
        (["mix", "--model", "glove-6b-50d", "--limit", "5"], "single layer"),
        (["wsd", "--model", "glove-6b-50d", "--limit", "0"], "--limit 0"),
        (["wsd", "--model", "glove-6b-50d", "--semcor-limit", "0"], "--semcor-limit 0"),
        (["reproduce", "--models", "glove-6b-50d", "--probes", "ner", "--out", "x"], "Unknown probe"),
    ],
)
def test_bad_requests_exit_2(capsys, args, message):
    from probes.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_unknown_model_from_the_real_entry_point(tmp_path):
    res = _run(["wsd", "--model", "no-such-model"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "Unknown model 'no-such-model'" in res.stderr and "glove-6b-50d" in res.stderr


def test_pos_run_saves_results_and_repairs_a_truncated_cache(tmp_path):
    out = tmp_path / "results"
    args = ["pos", "--model", "glove-6b-50d", "--limit", "40", "--results", str(out), "--threads", "1"]
    first = _run(args, tmp_path)
    assert first.returncode == 0, first.stderr
    df = load_results(out)
    assert set(df.model) == {"glove-6b-50d", "majority-tag"}
    acc = df[df.model == "glove-6b-50d"].value.iloc[0]
    # Truncate the cached features: the next run detects it, says so, rebuilds, same score.
    layer = next(tmp_path.glob("features/*/conll2000-train-limit40/layer_0.npy"))
    layer.write_bytes(layer.read_bytes()[:-100])
    second = _run(args, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "truncated" in second.stderr and "rebuilding" in second.stderr
    again = load_results(out)
    assert again[again.model == "glove-6b-50d"].value.iloc[0] == acc


def test_results_round_trip(tmp_path):
    base = {"model": "m", "probe": "pos", "command": "python -m probes pos --model m"}
    save_result(
        ProbeResult.from_json(
            {
                **base,
                "timestamp": "2026-01-01T00:00:00+00:00",
                "rows": [{"dataset": "d", "layer": 0, "metric": "accuracy", "value": 50.0, "n": 10}],
            }
        ),
        tmp_path,
    )
    newer = ProbeResult.from_json(
        {
            **base,
            "timestamp": "2026-01-02T00:00:00+00:00",
            "extra": {"mix": {"pos": {}}},
            "rows": [
                {"dataset": "d", "layer": "0", "metric": "accuracy", "value": 60.0, "n": 10},
                {"dataset": "d", "layer": "mean", "metric": "accuracy", "value": 61.0},
            ],
        }
    )
    path = save_result(newer, tmp_path)
    assert ProbeResult.from_json(json.loads(path.read_text())) == newer  # JSON round trip
    (tmp_path / "broken.json").write_text("{")
    df = load_results(tmp_path)
    assert list(df.columns) == [
        "model",
        "probe",
        "dataset",
        "layer",
        "metric",
        "value",
        "n",
        "lo",
        "hi",
        "unit",
        "clusters",
        "draws",
        "std",
        "seeds",
        "timestamp",
        "command",
        "schedule",
    ]
    # files without intervals (or units, or control draws) read back
    assert df.lo.isna().all() and df.unit.isna().all() and df.draws.isna().all()
    assert sorted(df.layer) == ["0", "mean"]
    assert df[df.layer == "0"].value.iloc[0] == 60.0  # the newer file wins
    assert load_extras(tmp_path, "pos")[-1]["mix"] == {"pos": {}}
    assert load_results(tmp_path / "none").empty
    with pytest.raises(ValueError, match="rows"):
        ProbeResult.from_json({"model": "m", "probe": "p"})
    with pytest.raises(ValueError, match="lacks"):
        ProbeResult("m", "p", [{"dataset": "d", "layer": "0", "metric": "accuracy"}])
    assert json.loads(next(tmp_path.glob("m__pos__*.json")).read_text())["command"].startswith("python -m probes")
    assert isinstance(df, pd.DataFrame)


def test_compare_finds_a_moved_number(tmp_path, capsys):
    from probes.cli import main

    rows = [{"dataset": "d", "layer": "0", "metric": "accuracy", "value": 50.0, "n": 10}]
    save_result(ProbeResult("m", "pos", rows, timestamp="2026-01-01T00:00:00+00:00"), tmp_path / "a")
    save_result(ProbeResult("m", "pos", rows, timestamp="2026-01-02T00:00:00+00:00"), tmp_path / "b")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    moved = [{**rows[0], "value": 50.01}]
    save_result(ProbeResult("m", "pos", moved, timestamp="2026-01-03T00:00:00+00:00"), tmp_path / "b")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "0 of 1 rows equal" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--tolerance", "0.02"]) == 0
    # a tolerance nothing can be within (NaN: every row "equal", exit 0) or below zero is refused, not applied
    capsys.readouterr()
    for tolerance in ("nan", "-1", "inf"):
        assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--tolerance", tolerance]) == 2
        assert f"--tolerance {float(tolerance)}: give a difference of 0 or more" in capsys.readouterr().err
    # a reference folder that does not exist read as "0 of 1 rows equal"; --models naming a model the candidate
    # lacks said "No results to compare in b", though b holds results
    assert main(["compare", str(tmp_path / "nope"), str(tmp_path / "b")]) == 2
    assert f"The reference folder {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--models", "minilm"]) == 2
    assert f"--models minilm: {tmp_path / 'b'} has no results of that model; it has m." in capsys.readouterr().err
    # a candidate file cut short was left out with a warning, and the rows it held went unchecked: "1 of 1 rows
    # equal", exit 0 (an audit)
    other = [{**rows[0], "dataset": "e"}]
    cut = save_result(ProbeResult("m2", "pos", other, timestamp="2026-01-04T00:00:00+00:00"), tmp_path / "b")
    cut.write_bytes(cut.read_bytes()[:40])
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--tolerance", "0.02"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'b'}: 1 result file cannot be read ({cut.name})" in err


def test_reproduce_without_models_runs_the_usable_zoo_and_says_which(tmp_path, capsys, monkeypatch):
    """Issue 31, item 4: `reproduce --out DIR` with no --models reproduces the built-in zoo (was: an error)."""
    from models.listing import NOT_TRAINED, describe
    from probes import reproduce
    from probes.cli import main
    from probes.stats.seeds import CLAIM_SEEDS

    assert set(reproduce.zoo_models()) <= set(reproduce.REGISTRY)
    real = describe
    monkeypatch.setattr(  # one zoo model left usable: the test runs in seconds
        reproduce,
        "describe",
        lambda spec: real(spec) if spec.name == "glove-6b-50d" else dataclasses.replace(real(spec), state=NOT_TRAINED),
    )
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    assert (
        main(["reproduce", "--out", str(tmp_path / "out"), "--probes", "pos", "--limit", "20", "--threads", "1"]) == 0
    )
    assert "reproducing the built-in zoo: glove-6b-50d (choose others with --models)" in capsys.readouterr().out
    assert set(load_results(tmp_path / "out" / "runs").model) == {"glove-6b-50d", "majority-tag"}
    # its rows feed the claims table: a trained probe runs CLAIM_SEEDS seeds unless told otherwise
    glove = [r for r in read_results(tmp_path / "out" / "runs") if r.model == "glove-6b-50d"]
    assert [len(r.params["seeds"]) for r in glove] == [CLAIM_SEEDS]
    monkeypatch.setattr(reproduce, "describe", lambda spec: dataclasses.replace(real(spec), state=NOT_TRAINED))
    assert main(["reproduce", "--out", str(tmp_path / "none"), "--probes", "pos"]) == 2
    assert "no model of the built-in zoo is usable here" in capsys.readouterr().err


def test_a_full_disk_at_the_save_prints_the_numbers_then_one_error(tmp_path, capsys, monkeypatch):
    """ENOSPC when the results were written: a traceback after the whole run, and its numbers lost (an audit, a 12 MB
    tmpfs). Now the run's table is printed, then one ``error:`` line naming the folder, exit 2."""
    import errno

    import probes.run
    from probes.cli import main

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(probes.run, "save_result", full)
    out = tmp_path / "results"
    assert main(["pos", "--model", "glove-6b-50d", "--limit", "30", "--results", str(out), "--threads", "1"]) == 2
    printed = capsys.readouterr()
    assert "glove-6b-50d" in printed.out and "majority-tag" in printed.out  # the numbers, before the error
    assert printed.err.strip().splitlines()[-1].startswith(f"error: The results could not be saved in {out}")
    assert "No space left on device" in printed.err and "Traceback" not in printed.err
