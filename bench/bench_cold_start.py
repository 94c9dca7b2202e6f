"""A cold server's first visits: how long each page takes, and how much of that the garbage collector held.

    git worktree add /tmp/old HEAD      # the code before a change
    python bench/bench_cold_start.py /tmp/old . --starts 2

The latency bench and the A/B tool time a warm server. This one starts a fresh server per checkout and
start, in turn (A, B, A, B, …), and opens every page of app.py's navigation once, in order, each as a new
visitor, to its settled page (the latency bench's test). Meanwhile a ``sitecustomize`` on the server's path
logs every collection of Python's garbage collector over 10 ms (``gc.callbacks``: generation, duration).
Reported per checkout: each page's settled time and collector pauses during its visit (medians over the
starts), and the pauses of a whole start (the server's boot included). The first visits after a start are
the ones that import torch, read WordNet and SemCor and load models, while each full collection walks the
growing heap (issue 30). The disk caches stay warm: a cold *process*, not a cold machine.

A benchmark, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ab_first_paint import refuse_unusable  # noqa: E402
from bench.bench_browser_latency import app_pages, visit  # noqa: E402
from corpora.errors import run_command  # noqa: E402
from tests.browser_support import launch_chromium, server_env, start_streamlit, stop  # noqa: E402

GC_HOOK = """
import gc, sys, time

_started = [0.0]


def _timed(phase, info):
    if phase == "start":
        _started[0] = time.perf_counter()
    elif (ms := (time.perf_counter() - _started[0]) * 1000) > 10:
        print(f"EMBPROBE_GC {time.time():.3f} {info['generation']} {ms:.1f}", file=sys.stderr, flush=True)


gc.callbacks.append(_timed)
"""


def gc_pauses(log: Path) -> list[tuple[float, int, float]]:
    """(wall-clock time, generation, ms) of each logged collection."""
    found = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("EMBPROBE_GC "):
            _, when, generation, ms = line.split()
            found.append((float(when), int(generation), float(ms)))
    return found


def one_start(browser, app: Path, tmp: Path, label: str) -> tuple[dict[str, tuple[float, float]], float]:
    """A fresh server of ``app``, every page visited once: {page: (settled s, GC ms during it)}, GC ms in all."""
    hook = tmp / "gc_hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(GC_HOOK, encoding="utf-8")
    log = tmp / f"{label}.log"
    env = server_env(EMBPROBE_MODELS=str(tmp / "m.toml"), PYTHONPATH=str(hook))
    proc, url = start_streamlit(log, env=env, app=app)
    visits = {}
    try:
        for name, (path, needle) in app_pages().items():
            began = time.time()
            seconds = visit(browser, f"{url}/{path}", needle, f"{label} {name}")
            visits[name] = (seconds, began, time.time())
    finally:
        stop(proc)
    pauses = gc_pauses(log)
    per_page = {
        name: (seconds, sum(ms for when, _, ms in pauses if began <= when <= ended))
        for name, (seconds, began, ended) in visits.items()
    }
    return per_page, sum(ms for _, _, ms in pauses)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="checkout A (the code before), with its app.py")
    p.add_argument("b", type=Path, help="checkout B (the change)")
    p.add_argument("--starts", type=int, default=2, help="fresh servers per checkout")
    args = p.parse_args(argv)
    refuse_unusable(p, args.a, args.b)
    from playwright.sync_api import sync_playwright

    runs: dict[int, list[tuple[dict[str, tuple[float, float]], float]]] = {0: [], 1: []}
    began = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp, sync_playwright() as pw:
        browser = launch_chromium(pw)
        for start in range(args.starts):
            for i in (0, 1) if start % 2 == 0 else (1, 0):
                side = (args.a, args.b)[i].resolve()
                runs[i].append(one_start(browser, side / "app.py", Path(tmp), f"{'AB'[i]}{start}"))
        browser.close()
    ended = time.strftime("%H:%M", time.gmtime())
    print(f"A = {args.a}, B = {args.b}, {args.starts} starts each, {began}–{ended} UTC")
    print("| page | A settled p50 (s) | A GC (ms) | B settled p50 (s) | B GC (ms) |\n|---|---:|---:|---:|---:|")
    for name in app_pages():
        cells = []
        for i in (0, 1):
            cells += [f"{statistics.median(r[0][name][0] for r in runs[i]):.2f}"]
            cells += [f"{statistics.median(r[0][name][1] for r in runs[i]):.0f}"]
        print(f"| {name} | {' | '.join(cells)} |")
    for i in (0, 1):
        totals = ", ".join(f"{total / 1000:.2f}" for _, total in runs[i])
        print(f"{'AB'[i]}: the collector's pauses over each whole start (boot included): {totals} s")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
