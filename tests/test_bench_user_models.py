"""Smoke test of bench/bench_user_models.py: the whole command on two tiny families and a few sentences.

Its timings mean nothing at this size; what is checked is that every part runs and reports, and that
the naive loop and the batched path agree (the speed-up itself is recorded in docs/benchmarks.md).
"""

from __future__ import annotations

import json

import torch

from bench.bench_user_models import main


def test_bench_user_models_runs_and_reports_identical_vectors(tmp_path, capsys):
    out = tmp_path / "bench.json"
    threads = torch.get_num_threads()
    try:
        rc = main(
            [
                "--kinds",
                "bert,gpt2",
                "--no-minilm",
                "--sentences",
                "8",
                "--layers",
                "1",
                "--hidden",
                "32",
                "--heads",
                "2",
                "--vocab-size",
                "400",
                "--threads",
                "1",
                "--json",
                str(out),
            ]
        )
    finally:
        torch.set_num_threads(threads)  # main sets the process's thread count
    assert rc == 0
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"bert", "gpt2"}
    for _name, r in results.items():
        assert "error" not in r, r
        assert (r["sentences"], r["layers"], r["dim"]) == (8, 2, 32)
        assert r["pieces_with_specials"] > r["words"] > 8
        assert r["max_abs_diff"] < 1e-5 and r["speedup"] > 0
    printed = capsys.readouterr().out
    assert "bert " in printed and "gpt2 " in printed and "speed-up: min" in printed
