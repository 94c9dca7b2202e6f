"""Where a new visitor's first paint spends the browser's main thread: a V8 CPU profile of each page.

    python bench/bench_page_profile.py [--repeats 3] [--json out.json]

Issue 30 judges each page's settled first paint against a Streamlit page with one plotly chart
(``bench_browser_latency.py``). That bench says how long; this one says on what. Every page of app.py's
navigation and the floor app's one-chart page, alone and inside the app's frame (``bench/floor_app.py``), is
opened by new visitors (a fresh browser context each) with Chrome's sampling profiler running on the page's
main thread from the navigation to the settled page (the same test as the latency bench). Each sample's time
goes to the script file it was in, grouped (:data:`GROUPS`): plotly.js (its module and every chart it
draws), React and styling (react-dom, emotion, styled-components, DOM insertion), Streamlit's Markdown, the
rest of Streamlit's frontend, the engine's own work (``(program)``: parsing, style, layout; garbage
collection) and **idle** (the thread waiting: for the network, the server's messages, other threads).

The profiler slows the page (the settled times here are longer than the latency bench's): read the rows
against each other, not as first-paint times. The first visit of each page is untimed (the server's
caches, the models). A benchmark, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_browser_latency import FLOORS, app_pages, new_visitor, settle, start_app, start_floor  # noqa: E402
from bench.latency_report import ended, machine  # noqa: E402
from corpora.errors import run_command  # noqa: E402
from tests.browser_support import chromium_problem, launch_chromium, stop  # noqa: E402

#: group -> script file stems (or V8's own node names) whose self time it sums; anything else: OTHER.
GROUPS = {
    "plotly.js": ("PlotlyChart",),
    "React and styling": (
        "react-dom",
        "emotion-styled",
        "emotion-react",
        "styled-components",
        "appendChild",
        "insertBefore",
    ),
    "Markdown": ("StreamlitMarkdown",),
    "engine (parse, style, layout, GC)": ("(program)", "(garbage collector)"),
    "idle": ("(idle)",),
}
OTHER = "other frontend JS"
COLUMNS = [*list(GROUPS)[:3], OTHER, *list(GROUPS)[3:]]
SAMPLING_US = 200


def source(call_frame: dict) -> str:
    """The file stem of a profile node's script (``PlotlyChart.D9Z0_fxz.js`` → ``PlotlyChart``), else its
    function name (V8's ``(idle)``, ``(program)``, a DOM call such as ``appendChild``)."""
    return call_frame["url"].rsplit("/", 1)[-1].split(".", 1)[0] or call_frame["functionName"] or "?"


def group_of(stem: str) -> str:
    return next((group for group, stems in GROUPS.items() if stem in stems), OTHER)


def self_times(profile: dict) -> Counter:
    """Milliseconds of self time per group (:data:`COLUMNS`) in a CDP ``Profiler.stop`` profile: each
    sample's interval (the next ``timeDeltas`` entry) to the node it landed in."""
    groups = {node["id"]: group_of(source(node["callFrame"])) for node in profile["nodes"]}
    deltas = profile.get("timeDeltas", [])
    out: Counter = Counter()
    for node_id, dt in zip(profile.get("samples", []), [*deltas[1:], 0]):
        out[groups[node_id]] += dt / 1000
    return out


def profiled_visit(browser, address: str, needle: str, label: str) -> tuple[float, Counter]:
    """A new visitor opens ``address`` under the profiler: (seconds to the settled page, ms per group)."""
    with new_visitor(browser) as page:
        cdp = page.context.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": SAMPLING_US})
        cdp.send("Profiler.start")
        t0 = time.perf_counter()
        page.goto(address)
        settle(page, needle, label, timeout_ms=600_000)
        settled = time.perf_counter() - t0
        return settled, self_times(cdp.send("Profiler.stop")["profile"])


def table(rows: dict[str, dict]) -> str:
    """Markdown: per page, the settled time under the profiler (p50) and the mean ms per group."""
    head = ["page", "n", "settled p50 (s)", *COLUMNS, "busy (s)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, r in rows.items():
        ms = [r["ms"].get(c, 0.0) for c in COLUMNS]
        busy = sum(ms) - r["ms"].get("idle", 0.0)
        cells = [
            name,
            str(r["n"]),
            f"{statistics.median(r['settled']):.2f}",
            *(f"{v:.0f}" for v in ms),
            f"{busy / 1000:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3, help="profiled visits per page (after one untimed)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if problem := chromium_problem():
        p.error(problem)
    info = machine()
    rows: dict[str, dict] = {}
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        proc, url = start_app(Path(tmp))
        floor_proc, floor_url = start_floor(Path(tmp))
        visits = {
            name: (f"{floor_url}/{query}", needle) for name, (query, needle) in FLOORS.items() if "chart" in query
        }
        visits |= {name: (f"{url}/{path}", needle) for name, (path, needle) in app_pages().items()}
        try:
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                for name, (address, needle) in visits.items():
                    profiled_visit(browser, address, needle, f"warm-up {name}")
                    runs = [profiled_visit(browser, address, needle, name) for _ in range(max(1, args.repeats))]
                    total = sum((ms for _, ms in runs), Counter())
                    rows[name] = {
                        "n": len(runs),
                        "settled": [s for s, _ in runs],
                        "ms": {k: v / len(runs) for k, v in total.items()},
                    }
                    print(f"{name}: {statistics.median(rows[name]['settled']):.2f} s", file=sys.stderr, flush=True)
                browser.close()
        finally:
            stop(proc)
            stop(floor_proc)
    print(ended(info, args.repeats))
    print("Self time on the page's main thread, ms per visit (mean), from the navigation to the settled page:\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
