"""The benchmark's own measuring code (bench/): memory high-water mark, naive reference paths,
low-precision (bf16 / int8) copies.

The speed ratios themselves are measured by ``bench/run_all.py`` and recorded in docs/benchmarks.md;
batched-vs-unbatched equality of the embedders is tested in test_transformer.py / test_elmo.py and the
cache round trip and truncation repair in test_probes_features.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.bench_transformer import naive_embed, semcor_sentences, sorted_batch_embed
from bench.measure import PeakRSS, rss_mb
from bench.run_all import build_parser, low_precision_copy, ratios
from models.registry import get_spec, load_spec


@pytest.fixture(scope="module")
def minilm():
    return load_spec(get_spec("minilm"), device="cpu")


@pytest.fixture(scope="module")
def sents():
    return semcor_sentences(12)


def test_peak_rss_sees_a_block_allocation_and_its_release():
    with PeakRSS() as m:
        a = np.ones(40_000_000, np.float32)  # 160 MB, touched
        del a
    assert m.peak_mb >= m.start_mb + 120, (m.start_mb, m.peak_mb)
    assert m.delta_mb >= 120
    # the block's memory was freed; a new block measures only its own (small) peak
    with PeakRSS() as small:
        b = np.ones(1000)
    assert small.delta_mb < 60 and b.sum() == 1000
    assert rss_mb() < m.peak_mb


def test_reference_paths_match_our_batched_vectors(minilm, sents):
    ours = minilm.embed(sents)
    ref = sorted_batch_embed(minilm, sents, batch_size=5)  # mixed lengths, padded batches, input order kept
    for o, s, r in zip(ours, sents, ref):
        np.testing.assert_allclose(naive_embed(minilm, s), o.vectors, atol=1e-4)
        np.testing.assert_allclose(r, o.vectors, atol=1e-4)


@pytest.mark.parametrize("kind, min_cos", [("bf16", 0.99), ("int8", 0.8)])
def test_low_precision_copy_is_close_but_distinct_and_leaves_fp32_untouched(minilm, sents, kind, min_cos):
    before = minilm.embed(sents[:4])
    q = low_precision_copy(minilm, kind)
    assert q.fingerprint() != minilm.fingerprint()  # never shares a feature-cache entry with fp32
    assert minilm.dtype == torch.float32 and next(minilm.model.parameters()).dtype == torch.float32
    qout = q.embed(sents[:4])
    after = minilm.embed(sents[:4])
    for b, a, x in zip(before, after, qout):
        np.testing.assert_array_equal(a.vectors, b.vectors)
        assert x.vectors.dtype == np.float32 and x.vectors.shape == b.vectors.shape
        assert not np.array_equal(x.vectors, b.vectors)
        cos = (x.vectors * b.vectors).sum(-1) / np.linalg.norm(x.vectors, axis=-1) / np.linalg.norm(b.vectors, axis=-1)
        assert cos.mean() > min_cos, cos.mean()
    with pytest.raises(ValueError, match="bf16"):
        low_precision_copy(minilm, "fp8")


def test_headline_ratios_and_targets():
    parts = {
        "minilm": {"speedup": 3.5, "device": "cpu"},
        "elmo": {"speedup": 2.5},
        "wsd-cold": {"run_s": 300.0, "model": "minilm"},
        "wsd-warm": {"run_s": 10.0},
    }
    r = ratios(parts)
    assert {k: round(v["value"], 2) for k, v in r.items()} == {"minilm": 3.5, "elmo": 2.5, "wsd": 30.0}
    assert [k for k, v in r.items() if not v["met"]] == ["elmo"]
    assert ratios({"minilm": {"speedup": 5.0, "device": "cuda:0"}})["minilm"]["target"] == 20
    assert ratios({"minilm": {"error": "ModelLoadError: x"}}) == {}
    args = build_parser().parse_args(["--quick"])
    assert args.quick and args.sentences is None  # sizes are filled in by main()


def test_host_part_measures_the_path_to_float16_rows_and_leaves_the_real_model_alone(sents):
    """``run_all.py --parts host`` (issue 33): the forward replaced, the rest of the path timed and sized."""
    from bench.bench_host import measure_shape
    from models.registry import load_embedder

    real = load_embedder("minilm")
    before = real.embed([sents[0]])[0].vectors
    r = measure_shape("llama-1b", sents[:30])
    assert r["shape"] == "17 x 2048" and r["words"] == sum(map(len, sents[:30]))
    assert r["feature_bytes"] == r["words"] * 17 * 2048 * 2  # every layer's float16 rows were written
    assert r["host_words_per_s"] > 0 and np.isfinite(r["feature_mb_per_s"]) and r["tokenize_us_per_word"] > 0
    r = measure_shape("minilm", sents[:30])
    assert r["feature_bytes"] == r["words"] * 7 * 384 * 2
    assert np.array_equal(load_embedder("minilm").embed([sents[0]])[0].vectors, before)


def test_ray_bench_reads_the_sweep_tasks_and_leaves_a_merged_seeds_result_out(tmp_path):
    """A sweep of several seeds writes one merged result beside its tasks' (``extra["sweep_seeds"]``, no
    ``"sweep"``): bench_ray's default run read it as a task and stopped with a KeyError."""
    import json

    from bench.bench_ray import _rows

    task = {"model": "m", "probe": "pos", "rows": [{"value": 1.0}], "extra": {"sweep": {"task": "t0", "part": 0}}}
    merged = {"model": "m", "probe": "pos", "rows": [{"value": 1.0}], "extra": {"sweep_seeds": ["t0", "t1"]}}
    (tmp_path / "task.json").write_text(json.dumps(task))
    (tmp_path / "merged.json").write_text(json.dumps(merged))
    assert _rows(tmp_path) == {("m", "pos", "t0", 0): [{"value": 1.0}]}


@pytest.mark.parametrize(
    "argv, env",
    [
        (["bench/bench_structural.py", "--device", "cuda"], {}),  # no GPU here: refused before any model loads
        (["bench/bench_gc_pause.py", "--repeats", "1"], {"EMBPROBE_DATA": "/nonexistent-embprobe-data"}),
    ],
)
def test_a_bench_script_refuses_a_missing_gpu_or_data_in_one_line(argv, env):
    """Bench scripts print a missing GPU or data folder as one ``error:`` line (exit 2), as ``python -m probes``
    does; they printed tracebacks."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if "--device" in argv and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, *argv], cwd=repo, env={**os.environ, **env}, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith("error: "), proc.stderr


@pytest.mark.parametrize("script", ["bench/gpu_report.py", "bench/latency_report.py"])
def test_the_report_modules_run_as_scripts_and_refuse_a_file_they_did_not_write(script, tmp_path):
    """``python bench/gpu_report.py --help`` failed on its own import (``bench`` not on the path); both report
    modules now re-render a run's Markdown from its JSON, and a JSON that is not one is one error line."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent

    def run(*args):
        return subprocess.run(
            [sys.executable, script, *args], cwd=tmp_path, env=os.environ, capture_output=True, text=True, timeout=120
        )

    script = str(repo / script)
    helped = run("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage:"), helped.stderr[-2000:]
    bad = tmp_path / ("gpu_check.json" if "gpu" in script else "run.json")
    wrong_shape = (
        '{"command": "c", "mode": "m", "budget_s": 1, "parts": [1]}'
        if "gpu" in script
        else '{"machine": {}, "times": {}}'
    )
    for text in ('{"truncated": ', wrong_shape):  # broken JSON; JSON of another shape (a traceback)
        bad.write_text(text)
        refused = run(str(tmp_path if "gpu" in script else bad))
        assert refused.returncode == 2 and refused.stderr.strip().startswith("error: "), refused.stderr
        assert "Traceback" not in refused.stderr


def test_gpu_report_rewrites_the_markdown_a_run_wrote_from_its_json(tmp_path):
    from bench.gpu_report import main, write_report

    report = {
        "command": "python bench/gpu_check.py --quick",
        "mode": "quick",
        "budget_s": 600,
        "parts": {"features": {"steps": {}, "skipped": ["minilm: no CUDA"]}},
    }
    write_report(report, tmp_path)
    written = (tmp_path / "gpu_check.md").read_text()
    (tmp_path / "gpu_check.md").write_text("stale")
    assert main([str(tmp_path)]) == 0
    assert (tmp_path / "gpu_check.md").read_text() == written and "minilm: no CUDA" in written


def test_latency_report_prints_a_runs_section_from_its_json(tmp_path, capsys):
    import json

    from bench.latency_report import machine, main, section

    info = machine() | {"uptime_end": "load average: 1.00", "utc_end": "2026-12-07 10:00:00"}
    info["utc_start"] = "2026-12-07 09:58:00"
    times = {"first paint, settled: reproduce": [3.1, 3.3], "floor: one plotly chart, settled": [2.5, 2.6]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"machine": info, "times": times}))
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.strip() == section(info, times, []).strip()
