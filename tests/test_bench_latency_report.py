"""bench/latency_report.py: each page's settle judged against the one-chart floor of the same run (issue 30); the
other browser benches' parts that run without a browser."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.bench_browser_latency import FLOORS
from bench.latency_report import FLOOR_MARGIN_S, report, section, settle_rows, settle_vs_floor, target

TIMES = {
    "first content": [1.2, 1.3, 1.25],
    "first paint, settled": [2.9, 3.0, 3.1],  # the default page (Models)
    "first paint, settled: attention": [3.4, 3.5, 3.7],
    "first paint, settled: floor: one plotly chart": [2.5, 2.6, 2.8],
    "first paint, settled: floor: empty Streamlit page": [1.1, 1.1, 1.2],
    "polysemy: new word (corpus index present)": [1.0, 1.1, 1.2],
    "attention: layer slider": [0.8, 0.9, 1.3],
}


def test_each_page_is_judged_against_the_floor_p50_plus_the_margin() -> None:
    rows = {r["page"]: r for r in settle_rows(TIMES)}
    assert set(rows) == {"models", "attention"}  # the floor pages are not pages of the app
    assert rows["models"]["floor"] == rows["attention"]["floor"] == 2.6
    assert abs(rows["models"]["over"] - 0.4) < 1e-9 and abs(rows["attention"]["over"] - 0.9) < 1e-9
    table = settle_vs_floor(TIMES)
    assert f"≤ floor + {FLOOR_MARGIN_S:g} s" in table
    models, attention = (line for line in table.splitlines() if line.startswith(("| models", "| attention")))
    assert models.endswith("| ✓ |") and "✗ (+0.40 s over)" in attention


def test_without_a_floor_there_is_no_verdict() -> None:
    assert settle_rows({"first paint, settled": [3.0]}) == []
    assert "no floor" in settle_vs_floor({"first paint, settled": [3.0]})


def test_targets_a_new_word_2_s_a_warm_step_1_s_first_paints_against_the_floor() -> None:
    assert target("polysemy: new word (corpus index present)") == 2.0
    assert target("attention: layer slider") == 1.0
    assert target("first paint, settled: syntax") is None
    lines = report(TIMES).splitlines()
    assert any(line.startswith("| attention: layer slider |") and "≤ 1 s ✗" in line for line in lines)
    assert any(line.startswith("| polysemy: new word") and "≤ 2 s ✓" in line for line in lines)


def test_the_section_names_machine_load_date_and_command() -> None:
    info = {
        "cpu": "AMD EPYC",
        "nproc": 2,
        "nice": 10,
        "uptime_start": "load average: 1.0",
        "uptime_end": "load average: 2.0",
        "utc_start": "2026-11-27 11:00:05",
        "utc_end": "2026-11-27 11:09:30",
        "command": "python bench/bench_browser_latency.py --repeats 5",
    }
    text = section(info, TIMES, ["a note"])
    assert text.startswith("## App latency, page settle vs floor (issue 30), 2026-11-27 11:00–11:09 UTC")
    assert "nice -n 10 python bench/bench_browser_latency.py --repeats 5" in text
    assert "AMD EPYC, 2 cores" in text and "load average: 2.0" in text
    assert "- a note" in text and settle_vs_floor(TIMES) in text


def test_the_floor_app_draws_one_chart_alone_or_inside_a_copy_of_the_apps_frame() -> None:
    """What each floor of the latency bench draws: nothing but a title, one chart, or that chart in the frame."""
    app = str(Path(__file__).resolve().parent.parent / "bench" / "floor_app.py")
    drawn = {}
    for name, (query, needle) in FLOORS.items():
        at = AppTest.from_file(app)
        for key, value in (p.split("=") for p in query.lstrip("?").split("&") if p):
            at.query_params[key] = value
        at.run()
        assert not at.exception, name
        charts = len(at.get("plotly_chart"))
        drawn[name] = (charts, [r.label for r in at.sidebar.radio], len(at.selectbox), len(at.slider))
        assert charts == 0 or needle == "Floor chart"  # the bench waits for the chart's title
    assert drawn["floor: empty Streamlit page"] == (0, [], 0, 0)
    assert drawn["floor: one plotly chart"] == (1, [], 0, 0)
    assert drawn["floor: one chart in the app's frame"] == (1, ["Chart downloads"], 1, 1)
    assert settle_rows({f"first paint, settled: {n}": [2.0] for n in FLOORS}) == []  # a floor is not an app page


def test_the_page_profile_gives_each_sample_interval_to_its_scripts_group() -> None:
    from bench.bench_page_profile import COLUMNS, self_times, table

    def node(i: int, url: str, fn: str = "f") -> dict:
        return {"id": i, "callFrame": {"url": url, "functionName": fn}}

    static = "http://127.0.0.1:8501/static/js/"
    profile = {  # a CDP Profiler.stop profile: sample k lasts until sample k+1 (timeDeltas[k+1], µs)
        "nodes": [
            node(1, "", "(root)"),
            node(2, static + "PlotlyChart.D9Z0_fxz.js"),
            node(3, static + "react-dom.Dzbslgj4.js"),
            node(4, "", "(idle)"),
            node(5, "", "(program)"),
            node(6, static + "Slider.WU6er_Bo.js"),
            node(7, "", "appendChild"),
        ],
        "samples": [2, 2, 3, 4, 5, 6, 7],
        "timeDeltas": [0, 1000, 3000, 500, 2000, 250, 750],
    }
    ms = self_times(profile)
    assert ms["plotly.js"] == 4.0  # 1.0 + 3.0: the first two samples' intervals
    assert ms["React and styling"] == 0.5  # react-dom's sample; appendChild's is the last (no interval after it)
    assert ms["idle"] == 2.0 and ms["engine (parse, style, layout, GC)"] == 0.25 and ms["other frontend JS"] == 0.75
    assert set(ms) <= set(COLUMNS)
    row = table({"attention": {"n": 1, "settled": [3.2], "ms": ms}}).splitlines()[-1]
    assert row.startswith("| attention | 1 | 3.20 | 4 |") and row.endswith("| 0.01 |")  # busy: all but idle


def test_the_ab_bench_refuses_an_unknown_page_or_a_folder_without_the_app(tmp_path, capsys) -> None:
    from bench.ab_first_paint import main as ab_main

    repo = str(Path(__file__).resolve().parent.parent)
    for argv, said in [
        ([repo, repo, "nosuch"], "unknown page(s) nosuch; the pages are models, polysemy"),
        ([str(tmp_path), repo, "--repeats", "1", "probes"], "holds no app.py"),
    ]:
        with pytest.raises(SystemExit):
            ab_main(argv)
        assert said in capsys.readouterr().err


def test_the_cold_start_bench_logs_each_long_collection_of_the_server(tmp_path) -> None:
    """The hook the cold-start bench puts on the server's path, in a real interpreter: a full collection over
    a large heap is logged with its generation and duration, and read back."""
    from bench.bench_cold_start import GC_HOOK, gc_pauses, main as cold_main

    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(GC_HOOK, encoding="utf-8")
    heap = "import gc; keep = [[i] for i in range(2_000_000)]; gc.collect(2)"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "hook")}
    done = subprocess.run([sys.executable, "-c", heap], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    log = tmp_path / "server.log"
    log.write_text("Uvicorn server started\n" + done.stderr, encoding="utf-8")
    pauses = gc_pauses(log)
    assert pauses and pauses[-1][1] == 2 and pauses[-1][2] > 10  # the full collection, over 10 ms
    assert all(abs(when - time.time()) < 300 for when, _, _ in pauses)
    with pytest.raises(SystemExit):
        cold_main([str(tmp_path), str(tmp_path)])  # no app.py there
