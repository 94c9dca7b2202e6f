"""bench/gpu_check.py and bench/scale_ladder.py on a machine without CUDA (issue 33).

The whole command runs the CPU way (``--device cpu``, so also on a GPU machine): every CPU part reports
finite numbers, the GPU parts are skipped and named, the report is written; its pieces — the per-layer
feature comparison, the row comparison against committed results, the step runner and the time budget —
are checked on real data. Timings mean nothing at this size.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.gpu_check import Steps, compare_layers, diff_rows, main
from bench.scale_ladder import SHAPES, shapes_named, with_costs
from corpora.paths import REPO_ROOT
from models.base import SentenceEmbedding

RUNS = REPO_ROOT / "docs" / "results" / "runs"


def _finite(*xs) -> bool:
    return all(isinstance(x, int | float) and math.isfinite(x) for x in xs)


@pytest.mark.slow
def test_quick_check_without_cuda_runs_the_cpu_parts_and_names_the_skipped_gpu_parts(tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["--quick", "--device", "cpu", "--out", str(out), "--threads", "1", "--sentences", "30"]
    threads = torch.get_num_threads()
    try:
        assert main([*argv, "--shapes", "minilm,llama-7b-slice"]) == 0
    finally:
        torch.set_num_threads(threads)
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["env"]["cuda"] is False and set(report["parts"]) == {"env", "features", "speed", "ladder", "probes"}
    assert not Path(report["work_dir"]).exists()  # the scratch folder (checkpoints made on the fly) is removed
    errors = {p: r.get("error") for p, r in report["parts"].items() if r.get("error")}
    assert errors == {}, errors

    speed = report["parts"]["speed"]["steps"]
    m = speed["minilm"]
    assert "error" not in m and m["sentences"] == 30 and m["words"] > 30 and m["batching"] == "embedder"
    assert _finite(m["extraction_words_per_s"], m["forward_words_per_s"], m["extraction_share"], m["pieces_per_word"])
    assert m["pieces_per_word"] >= 1 and m["extraction_peak_rss_mb"] > 0
    assert _finite(speed["elmo-small"]["extraction_words_per_s"])

    ladder = report["parts"]["ladder"]["steps"]["ladder"]
    assert ladder["tiny"] and [r["name"] for r in ladder["rows"]] == ["minilm/tiny", "llama-7b-slice/tiny"]
    for r in ladder["rows"]:
        assert "error" not in r, r
        assert _finite(r["words_per_s"], r["forward_words_per_s"], r["us_per_word_per_state_width"])
        assert r["feature_bytes"] > 0 and r["words"] > r["semcor_words"] > 0
        assert r["wsd_feature_s"] < 1.0  # the probe found the timed extraction's entries: the same calls
    assert len(ladder["rows"][1]["projected_us_per_word"]) == 2

    probes = report["parts"]["probes"]["steps"]
    cpu_run = probes["pos elmo-small --limit (cpu)"]
    assert "error" not in cpu_run and "--limit 30" in cpu_run["command"] and cpu_run["wall_s"] > 0

    skipped = " | ".join(f"{p}: {s}" for p, r in report["parts"].items() for s in r["skipped"])
    for gpu_part in ("elmo-small: no CUDA", "minilm: no CUDA", "gpt-small: no CUDA", "real shapes: no CUDA"):
        assert gpu_part in skipped
    assert "(cuda vs cpu): no CUDA" in skipped
    printed = capsys.readouterr().out
    assert "skipped:" in printed and "features: elmo-small: no CUDA" in printed

    md = (out / "gpu_check.md").read_text()
    assert "open (not measured on a GPU)" in md and "| minilm/tiny | 1 × 48 |" in md
    assert "| minilm | weights installed | cpu | " in md and "--limit 30" in md


@pytest.mark.slow
def test_the_gpu_parts_run_end_to_end_with_the_cpu_standing_in_for_the_gpu(tmp_path):
    """``--gpu cpu``: every GPU step runs (on the CPU), so the one real GPU run meets no untried code."""
    out = tmp_path / "report"
    argv = ["--quick", "--gpu", "cpu", "--out", str(out), "--threads", "1", "--sentences", "20", "--shapes", "minilm"]
    threads = torch.get_num_threads()
    try:
        assert main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    report = json.loads((out / "gpu_check.json").read_text())
    parts = report["parts"]
    assert [s for r in parts.values() for s in r["skipped"]] == [] and not any(r.get("error") for r in parts.values())
    features = parts["features"]["steps"]
    assert set(features) == {"elmo-small", "minilm", "gpt-small"}
    for name, f in features.items():  # the same model on the same device: the same vectors
        assert "error" not in f, (name, f)
        assert f["sentences"] == 20 and f["words"] > 20 and len(f["min_cosine"]) >= 3
        assert max(f["max_abs_diff"]) == 0.0 and min(f["min_cosine"]) > 1 - 1e-6
    probe = parts["probes"]["steps"]["pos elmo-small --limit (cuda vs cpu)"]
    assert probe["rows"] >= 5 and probe["identical"] == probe["rows"] and probe["outside_count"] == 0
    (rung,) = parts["ladder"]["steps"]["ladder"]["rows"]
    assert (rung["name"], rung["layers"], rung["hidden"]) == ("minilm", 6, 384) and _finite(rung["words_per_s"])
    md = (out / "gpu_check.md").read_text()
    assert "Features, GPU against CPU (models: 3): relative error ≤ 0.00e+00, cosine ≥ 1.000000" in md
    assert f"{probe['rows']} of {probe['rows']} rows within ±0.1 points, {probe['rows']} identical" in md


def test_bad_arguments_are_one_error_line_and_write_nothing(tmp_path, capsys):
    for argv, says in (
        (["--budget-s", "0"], "--budget-s"),
        (["--parts", "env,gpu"], "unknown part(s) gpu"),
        (["--sentences", "10"], "--sentences needs --quick"),
        (["--shapes", "llama-70b"], "unknown shape(s) llama-70b"),
    ):
        out = tmp_path / "never"
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
        assert not out.exists()


def test_a_spent_budget_skips_every_part_after_env_and_says_so(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["--device", "cpu", "--budget-s", "0.001", "--out", str(out)]) == 0
    report = json.loads((out / "gpu_check.json").read_text())
    assert "torch" in report["env"]
    for part in ("features", "speed", "ladder", "probes"):
        assert report["parts"][part]["skipped"] == [f"{part}: time budget spent"]
    assert "time budget spent" in (out / "gpu_check.md").read_text()


def test_steps_record_errors_skip_gpu_steps_without_cuda_and_stop_at_the_deadline(tmp_path):
    import time

    steps = Steps(tmp_path / "state.json", deadline=time.time() + 60, cuda=False)
    steps.run("boom", lambda: {"x": 1 / 0})
    steps.run("fine", lambda: {"x": 1})
    steps.run("on gpu", lambda: {"x": 2}, gpu=True)
    steps.deadline = time.time() - 1
    steps.run("late", lambda: {"x": 3})
    saved = json.loads((tmp_path / "state.json").read_text())
    assert saved["steps"]["boom"]["error"].startswith("ZeroDivisionError") and saved["steps"]["fine"]["x"] == 1
    assert saved["skipped"] == ["on gpu: no CUDA", "late: time budget spent"]


def test_compare_layers_reports_each_layers_worst_word():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(3, 7, 16)).astype(np.float32)  # (layers, words, dim)
    a = [SentenceEmbedding(words=["w"] * 7, vectors=vecs, oov=np.zeros(7, bool))]
    same = compare_layers(a, a)
    assert same["words"] == 7 and same["max_abs_diff"] == [0.0] * 3 and min(same["min_cosine"]) > 1 - 1e-9
    moved = vecs.copy()
    moved[1, 4] = -moved[1, 4]  # one word of layer 1 flipped
    res = compare_layers(a, [SentenceEmbedding(words=["w"] * 7, vectors=moved, oov=np.zeros(7, bool))])
    assert res["max_abs_diff"][0] == 0.0 and res["max_abs_diff"][2] == 0.0
    assert res["max_abs_diff"][1] == pytest.approx(2 * np.abs(vecs[1, 4]).max(), rel=1e-6)
    assert res["min_cosine"][1] == pytest.approx(-1.0) and res["max_rel_err"][1] > 0


def test_diff_rows_against_committed_results_uses_the_tolerance(tmp_path):
    src = sorted(RUNS.glob("elmo-small__pos__*.json"))[-1]  # the newest: the row the reference keeps
    cand = tmp_path / "cand"
    cand.mkdir()
    shutil.copy(src, cand / src.name)
    same = diff_rows(RUNS, cand, 0.10)
    assert same["rows"] > 0 and same["identical"] == same["rows"] and same["outside"] == []
    data = json.loads(src.read_text())
    data["rows"][0]["value"] += 0.05
    data["rows"][1]["value"] -= 0.5
    (cand / src.name).write_text(json.dumps(data))
    res = diff_rows(RUNS, cand, 0.10)
    assert res["identical"] == res["rows"] - 2 and res["max_abs_diff"] == pytest.approx(0.5)
    assert [round(r["diff"], 6) for r in res["outside"]] == [-0.5] and res["outside_count"] == 1


def test_ladder_shapes_costs_and_the_7b_projection():
    assert [s.name for s in SHAPES] == ["minilm", "bert-base", "bert-large", "llama-1b", "llama-7b-slice"]
    tiny = shapes_named("bert-large", tiny=True)[0]
    assert (tiny.layers, tiny.hidden, tiny.heads) == (6, 128, 4) and tiny.hidden % tiny.heads == 0
    row = with_costs(
        {"layers": 2, "hidden": 4096, "full_layers": 32, "words": 1000, "feature_s": 0.5, "forward_words_per_s": 4000}
    )
    assert row["words_per_s"] == 2000 and row["us_per_word"] == 500 and row["forward_share"] == 0.5
    assert row["us_per_word_per_state_width"] == pytest.approx(500 / (3 * 4096))
    assert row["projected_us_per_word"] == pytest.approx([500 * 33 / 3, 500 * 16])
    assert row["projected_feature_bytes_per_word"] == 33 * 4096 * 2
