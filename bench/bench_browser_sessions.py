"""Several browser sessions at once on the Polysemy explorer: do they share the CPU or queue?

    python bench/bench_browser_sessions.py [--repeats 3] [--sessions 3] [--torch-threads 0] [--json out.json]

Each repeat starts two fresh ``streamlit run app.py`` servers (``tests.browser_support.streamlit_command``,
as the browser tests, ``EMBPROBE_MODELS`` on an empty temp file, ``HF_HUB_OFFLINE=1``), so no
scenario is served from the other's ``st.cache_data``. Alone: one session opens the Polysemy page
(MiniLM, default word "bank"), types an untimed warm-up word, then every measured word in turn.
Together: ``--sessions`` sessions open the page at the same moment ("loading model minilm" must
appear once in the server log), type a warm-up word, then in each round all type their own word
at the same moment (a ``threading.Barrier``); the words differ, so no session gets another's work.

A time runs from the key press to the settled page, polled in the page: script state
``notRunning``, no skeleton, the word's "… occurrences of “word” in SemCor" caption, both plotly
charts drawn, the scatter titled with the word. Then the page is checked: its own word only, no
error box or traceback, no SemCor sense shown as "not in WordNet 3.0". Each session is a thread
with its own Playwright and Chromium (the sync API is per thread). The barrier's action samples
the server's CPU seconds and the machine's busy fraction (/proc/stat) at each round's edges.

What the CPU forces on ``nproc`` cores: n words at once need n times one word's CPU, so the
ratio (at once / alone) is at least max(1, n × c / nproc), c the cores one word keeps busy alone:
1 (one core per request), the server's measured cores, or the whole machine's (the benchmark's
browsers share it). A ratio above the last is queueing. ``--torch-threads 0`` leaves torch's
thread count to the library (as ``make app``); N sets OMP/MKL_NUM_THREADS in the server.
A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from corpora.errors import run_command  # noqa: E402
from tests.browser_support import CHROMIUM, launch_chromium, server_env, start_streamlit, stop  # noqa: E402

# Nouns with ≥ 120 tagged SemCor occurrences (the page's sample size), so every word is the same work;
# one untimed warm-up word per session first (first-use costs after the visit's "bank").
WORDS = (("interest", "line", "point"), ("place", "time", "way"), ("form", "work", "area"))
WARMUP = ("house", "side", "hand")
TIMEOUT_MS = 300_000
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
SETTLED_JS = (
    """(word) => {
  const ERRORS = '__ERRORS__';
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  if (document.querySelector(ERRORS)) return true;   // settled on an error: recorded, not waited for
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main || !main.textContent.includes('occurrences of \\u201c' + word + '\\u201d in SemCor')) return false;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  if (charts.length < 2 || !charts.every(c => c.querySelector('.main-svg'))) return false;
  const title = charts[0].querySelector('.gtitle');
  return !!title && title.textContent.includes(word) && charts[0].querySelectorAll('.scatterlayer .point').length >= 10;
}"""
).replace("__ERRORS__", ERRORS)


def cpu_sample(pid: int) -> dict:
    """Wall time, the process's CPU seconds (all threads) and the machine's busy/total jiffies."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    jiffies = [int(x) for x in cpu[:8]]
    return {
        "t": time.perf_counter(),
        "server_cpu_s": (int(fields[11]) + int(fields[12])) / ticks,
        "busy": sum(jiffies) - jiffies[3] - jiffies[4],
        "total": sum(jiffies),
    }


def between(a: dict, b: dict) -> dict:
    return {
        "wall_s": b["t"] - a["t"],
        "server_cpu_s": b["server_cpu_s"] - a["server_cpu_s"],
        "machine_busy": (b["busy"] - a["busy"]) / max(1, b["total"] - a["total"]),
    }


def start_server(tmp: Path, torch_threads: int) -> tuple[subprocess.Popen, str, Path]:
    """``streamlit run app.py`` (tests/browser_support.py's command) on a free localhost port:
    (process, base URL, its log file)."""
    log = tmp / f"server-{time.time_ns()}.log"
    env = server_env(EMBPROBE_MODELS=str(tmp / "embprobe.toml"))  # never the user's registry
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)
        env.update({var: str(torch_threads)} if torch_threads else {})
    proc, url = start_streamlit(log, env=env, timeout_s=120)
    return proc, url, log


def _problem(page, others: set[str]) -> str | None:
    """What is wrong with the settled page: an error box, a traceback, another session's word, a
    SemCor sense shown as unknown (WordNet read wrongly); None when nothing is."""
    box, text = page.locator(ERRORS), page.locator('[data-testid="stMain"]').text_content()
    wrong = [w for w in others if f"occurrences of “{w}” in SemCor" in text]
    return (
        (box.count() and box.first.text_content())
        or ("Traceback" in text and "a traceback")
        or (wrong and f"shows {wrong}")
        or ("not in WordNet 3.0" in text and "a sense shown as not in WordNet")
        or None
    )


def session(url: str, words: tuple[str, ...], others: set[str], barrier: threading.Barrier, out: dict) -> None:
    """One browser session: open the page, then per round wait at the barrier and type a word
    (``words[0]``: the warm-up, not timed)."""
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()

            def settle(word: str, label: str) -> bool:
                page.wait_for_function(SETTLED_JS, arg=word, polling=100, timeout=TIMEOUT_MS)
                if problem := _problem(page, others):
                    out["errors"].append(f"{label}: {problem}")
                    page.goto(f"{url}/polysemy")  # afresh: an error box would satisfy the next wait at once
                    page.wait_for_function(SETTLED_JS, arg="bank", polling=100, timeout=TIMEOUT_MS)
                return not problem

            barrier.wait()
            t0 = time.perf_counter()
            page.goto(f"{url}/polysemy")  # as a new visitor sees it: "bank", MiniLM
            settle("bank", "first visit")
            out["first_visit_s"] = time.perf_counter() - t0
            box = page.get_by_label("Word (lemma)", exact=True)
            for i, word in enumerate(words):
                barrier.wait()
                t0 = time.perf_counter()
                box.fill(word)
                box.press("Enter")
                page.wait_for_function(SETTLED_JS, arg=word, polling=100, timeout=TIMEOUT_MS)
                elapsed = time.perf_counter() - t0
                ok = settle(word, word)
                if i:
                    out["times"].append(elapsed)
                    out["ok"].append(ok)
            barrier.wait()
            browser.close()
    except BaseException as exc:  # noqa: BLE001 — reported, and the others must not wait forever
        out["error"] = f"{type(exc).__name__}: {exc}"
        barrier.abort()


def scenario(word_lists: list[tuple[str, ...]], torch_threads: int, tmp: Path) -> dict:
    """Fresh server; one thread per session, all acting at the barrier; per-round CPU samples."""
    proc, url, log_file = start_server(tmp, torch_threads)
    samples: list[dict] = []
    try:
        barrier = threading.Barrier(len(word_lists), action=lambda: samples.append(cpu_sample(proc.pid)))
        every = {w for ws in word_lists for w in ws}
        outs = [{"words": list(ws), "times": [], "ok": [], "errors": []} for ws in word_lists]
        with ThreadPoolExecutor(len(word_lists)) as pool:  # one thread per session
            for warm, ws, o in zip(WARMUP, word_lists, outs):
                pool.submit(session, url, (warm, *ws), every - set(ws), barrier, o)
        log = log_file.read_text()
        if errors := [o["error"] for o in outs if "error" in o]:
            raise RuntimeError("; ".join(errors) + f"\nserver log:\n{log[-3000:]}")
        return {
            "sessions": outs,
            "model_loads": len(re.findall(r"loading model minilm\b", log)),
            "app_errors": [
                line
                for block in re.split(r"\n(?=\d{4}-\d\d-\d\d )", log)
                if "app error" in block
                for line in re.findall(r"^[\w.]+(?:Error|Exception)\b.*$", block, re.M)[-1:]
            ],
            # samples: before the visit, the warm-up, each timed round; and at the end
            "visit": between(samples[0], samples[1]),
            "warmup": between(samples[1], samples[2]),
            "rounds": [between(a, b) for a, b in zip(samples[2:], samples[3:])],
        }
    finally:
        stop(proc)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(runs: list[dict], n: int) -> tuple[dict, str]:
    """Medians per word alone and at once (correct pages only), the ratio, the CPU-forced bounds;
    and the Markdown table."""
    med, ncpu = statistics.median, os.cpu_count()
    times: dict[str, dict[str, list[float]]] = {"alone": {}, "together": {}}
    for r, kind in ((r, k) for r in runs for k in times):
        for se in r[kind]["sessions"]:
            for w, t, ok in zip(se["words"], se["times"], se["ok"]):
                times[kind].setdefault(w, []).extend([t] if ok else [])
    rounds = {k: [x for r in runs for x in r[k]["rounds"]] for k in times}
    alone, together = ({w: med(ts) for w, ts in times[k].items() if ts} for k in times)
    one, many = (med(t for ts in times[k].values() for t in ts) for k in times)
    cores = med(x["server_cpu_s"] / x["wall_s"] for x in rounds["alone"])
    s = {
        "alone": alone,
        "together": together,
        "alone_median_s": one,
        "together_median_s": many,
        "ratio": many / one,
        "bound_one_core": max(1.0, n / ncpu),
        "cores_used_alone": cores,
        "bound_cores_alone": max(1.0, n * cores / ncpu),
        "machine_busy": {k: med(x["machine_busy"] for x in rounds[k]) for k in times},
        "bound_machine_alone": max(1.0, n * med(x["machine_busy"] for x in rounds["alone"])),
        "server_cpu_per_word_s": {
            k: med(x["server_cpu_s"] / (n if k == "together" else 1) for x in rounds[k]) for k in times
        },
    }
    lines = [f"| word | alone (s) | {n} at once (s) | ratio |", "|---|---:|---:|---:|"]
    lines += [
        f"| {w} | {a:.2f} | {together.get(w, float('nan')):.2f} | {together.get(w, float('nan')) / a:.2f}× |"
        for w, a in alone.items()
    ]
    lines += [f"| **median** | **{one:.2f}** | **{many:.2f}** | **{many / one:.2f}×** |", ""]
    for i, r in enumerate(runs, 1):
        t = r["together"]["sessions"]
        errors = [e for k in times for se in r[k]["sessions"] for e in se["errors"]]
        lines.append(
            f"- repeat {i}: at once, per session (s) "
            + " / ".join(" ".join(f"{x:.1f}" for x in se["times"]) for se in t)
            + "; first visits at once "
            + ", ".join(f"{se['first_visit_s']:.1f}" for se in t)
            + f" s; 'loading model minilm' ×{r['together']['model_loads']}; own word shown "
            f"{sum(sum(se['ok']) for se in t)}/{sum(len(se['ok']) for se in t)}"
            + (f"; problems: {errors}" if errors else "")
            + (f"; logged: {[e[:90] for k in times for e in r[k]['app_errors']]}" if errors else "")
        )
    cpu, busy = s["server_cpu_per_word_s"], s["machine_busy"]
    lines += [
        "",
        f"- server CPU per word: alone {cpu['alone']:.2f} s ({cores:.2f} cores), at once "
        f"{cpu['together']:.2f} s; machine busy alone {100 * busy['alone']:.0f} %, at once "
        f"{100 * busy['together']:.0f} %",
        f"- CPU-forced ratio: {s['bound_one_core']:.2f}× at one core per request ({n} on {ncpu}), "
        f"{s['bound_cores_alone']:.2f}× at the server's cores per request alone, "
        f"{s['bound_machine_alone']:.2f}× at the machine's (browser included); measured {many / one:.2f}×",
    ]
    return s, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--sessions", type=int, default=3, choices=range(1, len(WORDS) + 1))
    p.add_argument("--words", type=int, default=3, help="words per session (rounds)")
    p.add_argument("--torch-threads", type=int, default=0, help="0: torch's default, as `make app`")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        p.error(f"Chromium not found at {CHROMIUM}: `make browser`, or set EMBPROBE_CHROMIUM")
    lists = [ws[: args.words] for ws in WORDS[: args.sessions]]
    info = {
        "nproc": os.cpu_count(),
        "load_start": load(),
        "utc_start": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        for i in range(args.repeats):  # alone: one session types every word
            runs.append(
                {
                    "alone": scenario([tuple(w for ws in lists for w in ws)], args.torch_threads, Path(tmp)),
                    "together": scenario(lists, args.torch_threads, Path(tmp)),
                }
            )
            print(f"repeat {i + 1}/{args.repeats} done, load {load()}", file=sys.stderr)
    info |= {"load_end": load(), "utc_end": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    s, text = report(runs, args.sessions)
    print(
        f"nproc {info['nproc']}, load {info['load_start']} → {info['load_end']}, "
        f"{info['utc_start']} – {info['utc_end']} UTC, torch threads {args.torch_threads or 'default'}\n"
    )
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"machine": info, "args": vars(args) | {"json": str(args.json)}, "summary": s, "runs": runs}, indent=1
            )
        )
    return (
        0
        if all(
            r["together"]["model_loads"] == 1 and not r[k]["app_errors"] and all(se["ok"]) and not se["errors"]
            for r in runs
            for k in ("alone", "together")
            for se in r[k]["sessions"]
        )
        else 1
    )


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
