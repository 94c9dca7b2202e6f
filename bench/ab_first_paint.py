"""A/B of a page's first paint: the same pages of two checkouts of the app, new visitors interleaved.

    git worktree add /tmp/old HEAD      # the code before a change
    python bench/ab_first_paint.py /tmp/old . --repeats 10 probes attention

Issue 30: between two runs of ``bench_browser_latency.py`` the floor moves by up to 0.5 s, as much as the
margin a page is judged by, so a change to a page is measured against the code before it in one sitting.
Each checkout's ``app.py`` runs on its own server (``streamlit run`` puts the script's folder first on the
import path, so each server imports its own checkout's packages); a new visitor (a fresh browser context)
opens the page on one and then the other, in turn (ABBA: the order flips each round), to the settled page
(the latency bench's test and evidence, ``bench_browser_latency.app_pages``). The first round is untimed (the
servers' caches, the models). Prints per page the p50 and mean of each side and B − A.

A benchmark, not a test: the numbers depend on the machine and its load. On the 2-core dev machine one
change read −0.14 and −0.24 s in two runs of 10 visitors a side, another −0.37 s with 6 and −0.06 s with 10:
differences under ~0.2 s are at the edge of what it tells apart (docs/benchmarks.md, issue 30).
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
from bench.bench_browser_latency import app_pages, start_app, visit  # noqa: E402
from tests.browser_support import chromium_problem, launch_chromium, stop  # noqa: E402


def refuse_unusable(p: argparse.ArgumentParser, *checkouts: Path) -> None:
    """Stop with a usage error when a checkout holds no app.py or there is no Chromium to visit with."""
    for side in checkouts:
        if not (side / "app.py").is_file():
            p.error(f"{side} holds no app.py")
    if problem := chromium_problem():
        p.error(problem)


def summary(name: str, a: list[float], b: list[float]) -> str:
    pa, pb = statistics.median(a), statistics.median(b)
    return (
        f"{name}: A p50 {pa:.2f} s (mean {statistics.mean(a):.2f}), B p50 {pb:.2f} s (mean {statistics.mean(b):.2f}), "
        f"B − A {pb - pa:+.2f} s at p50, {len(a)} visitors each"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="checkout A (the code before), with its app.py")
    p.add_argument("b", type=Path, help="checkout B (the change)")
    p.add_argument("pages", nargs="+", help=f"pages by script name: {', '.join(app_pages())}")
    p.add_argument("--repeats", type=int, default=10, help="timed visitors per page and side")
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
                for round_ in range(args.repeats + 1):
                    for name in args.pages:
                        path, needle = pages[name]
                        for i in (0, 1) if round_ % 2 == 0 else (1, 0):
                            seconds = visit(browser, f"{servers[i][1]}/{path}", needle, f"{'AB'[i]} {name}")
                            if round_:  # the first round warms both servers
                                times[(name, i)].append(seconds)
                browser.close()
        finally:
            for proc, _ in servers:
                stop(proc)
    print(f"A = {args.a}, B = {args.b}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    for name in args.pages:
        print(summary(name, times[(name, 0)], times[(name, 1)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
