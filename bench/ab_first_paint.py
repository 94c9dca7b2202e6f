"""A/B of a page's first paint: the same pages of two checkouts of the app, new visitors interleaved.

    git worktree add /tmp/old HEAD      # the code before a change
    python bench/ab_first_paint.py /tmp/old . --repeats 10 probes attention

Issue 30: between two runs of ``bench_browser_latency.py`` the floor moves by up to 0.5 s, as much as the
margin a page is judged by, so a change to a page is measured against the code before it in one sitting.
Each checkout's ``app.py`` runs on its own server (``streamlit run`` puts the script's folder first on the
import path, so each server imports its own checkout's packages); a new visitor (a fresh browser context)
opens the page on one and then the other, in turn (ABBA: the order flips each round), to the settled page
(the latency bench's test and evidence, ``bench_browser_latency.app_pages``); ``--returning``: a returning
visitor instead (a new tab of one browser context, its cache warm). The first round is untimed (the servers'
caches, the models, the browser's cache). Prints per page the p50 and mean of each side and B − A: the median of
the rounds' paired differences, with its interval (95 % over all the pages together, as
``latency_report.settle_rows``; "too few rounds" under 6 rounds for one page).

A benchmark, not a test: the numbers depend on the machine and its load. On the 2-core dev machine one
change read −0.14 and −0.24 s in two runs of 10 visitors a side, another −0.37 s with 6 and −0.06 s with 10:
differences under ~0.2 s are at the edge of what it tells apart (docs/benchmarks.md, issue 30).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_browser_latency import VIEWPORT, app_pages, start_app, visit  # noqa: E402
from bench.latency_report import FAMILY_ALPHA, median_interval  # noqa: E402
from corpora.errors import run_command  # noqa: E402
from tests.browser_support import chromium_problem, launch_chromium, stop  # noqa: E402


def refuse_unusable(p: argparse.ArgumentParser, *checkouts: Path) -> None:
    """Stop with a usage error when a checkout holds no app.py or there is no Chromium to visit with."""
    for side in checkouts:
        if not (side / "app.py").is_file():
            p.error(f"{side} holds no app.py")
    if problem := chromium_problem():
        p.error(problem)


def summary(name: str, a: list[float], b: list[float], pages: int = 1) -> str:
    """One page's line: each side's p50 and mean, and B − A per round (paired): median and interval."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    low, high = median_interval(diffs, 1 - FAMILY_ALPHA / pages)
    interval = "too few rounds for an interval" if math.isnan(low) else f"interval {low:+.2f} to {high:+.2f} s"
    return (
        f"{name}: A p50 {statistics.median(a):.2f} s (mean {statistics.mean(a):.2f}), "
        f"B p50 {statistics.median(b):.2f} s (mean {statistics.mean(b):.2f}), "
        f"B − A {statistics.median(diffs):+.2f} s (median of {len(diffs)} rounds; {interval}), {len(a)} visitors each"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="checkout A (the code before), with its app.py")
    p.add_argument("b", type=Path, help="checkout B (the change)")
    p.add_argument("pages", nargs="+", help=f"pages by script name: {', '.join(app_pages())}")
    p.add_argument("--repeats", type=int, default=10, help="timed visitors per page and side")
    p.add_argument("--returning", action="store_true", help="returning visitors (a new tab, the cache warm)")
    args = p.parse_intermixed_args(argv)  # options may stand between the pages
    pages = app_pages()
    if unknown := [name for name in args.pages if name not in pages]:
        p.error(f"unknown page(s) {', '.join(unknown)}; the pages are {', '.join(pages)}")
    refuse_unusable(p, args.a, args.b)
    from playwright.sync_api import sync_playwright

    times: dict[tuple[str, int], list[float]] = {(name, i): [] for name in args.pages for i in (0, 1)}
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        servers = []
        try:
            for i, side in enumerate((args.a, args.b)):
                servers.append(start_app(Path(tmp), app=side.resolve() / "app.py", log=f"server{i}.log"))
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                returning = browser.new_context(viewport=VIEWPORT) if args.returning else None
                for round_ in range(args.repeats + 1):
                    for name in args.pages:
                        path, needle = pages[name]
                        for i in (0, 1) if round_ % 2 == 0 else (1, 0):
                            address, label = f"{servers[i][1]}/{path}", f"{'AB'[i]} {name}"
                            seconds = visit(browser, address, needle, label, returning)
                            if round_:  # the first round warms both servers
                                times[(name, i)].append(seconds)
                browser.close()
        finally:
            for proc, _ in servers:
                stop(proc)
    visitors = "returning visitors" if args.returning else "new visitors"
    print(f"A = {args.a}, B = {args.b}, {visitors}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    for name in args.pages:
        print(summary(name, times[(name, 0)], times[(name, 1)], len(args.pages)))
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
