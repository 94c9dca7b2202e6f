"""What a person feels: first paint and warm interactions, timed in a real browser.

    python bench/bench_browser_latency.py [--repeats 5] [--only attention,corpus] [--no-first-paint] [--json out.json]

One ``streamlit run app.py`` server (``tests.browser_support.streamlit_command``, as the browser
tests; ``EMBPROBE_MODELS`` on an empty temp file, ``HF_HUB_OFFLINE=1``) and headless Chromium at
1440 × 900. A warm-up visit opens every page once (models loaded, WordNet and SemCor read, caches
filled), untimed: the targets are for a warm server.

- **first paint**, for every page of app.py's navigation (``tests.browser_support.nav_pages``: a new
  page is timed without listing it here): a new browser context (a new visitor: no session, no browser
  cache) opens the page's address, timed to its *first content* (the page's title drawn, from the
  navigation's start) and to the *settled* page (below), every widget and chart drawn. Beside them, the
  **floor**: ``bench/floor_app.py`` on its own server (a page with a title, and one with a small plotly
  chart) timed the same way, in rounds: each round visits every page and floor once, in a shuffled order.
  **Page settle vs floor** (issue 30): each page's paired differences to the one-chart floor (one per round),
  their median, a simultaneous 95 % interval and whether the page is within 0.5 s of the floor
  (``bench/latency_report.py``; the absolute 2 s goal is retired: the one-chart floor alone is ~2.6 s here).
- **warm interactions**, per page (``--only`` names them: models, attention, polysemy, corpus,
  embedding_space, probes, syntax, navigation): a page switch from the sidebar (``navigation``: from
  Models to each page), a slider step, a picker, a clicked head, a neighbours query, a new word on the
  Polysemy explorer (read from the SemCor feature cache — the corpus index — when it holds the
  model: the step's name says whether it did), a corpus search for another occurrence (``corpus``: the
  Polysemy explorer's search over every sense-tagged SemCor token). Each is timed from the action (a key
  press; a click on a tile; for a picker, the click on the option — opening the list and typing to bring a
  virtualised option into view come before, untimed) to the settled page, alternating between two values
  so every repeat is a real change (a page switch: going back to Models is untimed).

Settled = the app's script state is ``notRunning``, no skeleton (lazy element) is left, every plotly chart shown has
drawn its SVG, and the action's own evidence is on the page (a chart title, a caption naming the new value),
polled every 20 ms in the page. Reported: p50 / p95 / max per step over ``--repeats`` (p95 of 5 repeats is the
worst but one; use ``--repeats 20`` for a real 95th percentile). Targets: warm interactions ≤ 1 s at p95, a
new Polysemy word ≤ 2 s (issue 16), each page's settled first paint ≤ the floor + 0.5 s (issue 30). The output
ends with a Markdown section (machine, cores, ``uptime`` load, date, command) for docs/benchmarks.md.

A benchmark, not a test: the numbers depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.latency_report import RETURNING, ended, machine, report, section, settle_rows, settle_vs_floor  # noqa: E402
from corpora.errors import run_command  # noqa: E402
from tests.browser_support import chromium_problem, launch_chromium, nav_pages, server_env, start_streamlit, stop  # noqa: E402

VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = int(os.environ.get("BENCH_TIMEOUT_MS", 180_000))
# Before the page loads: the time the page's title (its h1) is first in the page — the first content a
# reader sees (the web's "first contentful paint" also counts Streamlit's loading skeleton, which says nothing).
FIRST_CONTENT_JS = """
window.__embprobeTitle = null;
new MutationObserver((_, obs) => {
  const h1 = document.querySelector('[data-testid="stMain"] h1');
  if (h1 && h1.innerText.trim()) { window.__embprobeTitle = performance.now(); obs.disconnect(); }
}).observe(document, {subtree: true, childList: true});
"""
# Before an action: a flag that turns true when the app's script (or a fragment) starts running.
ARM_JS = """() => {
  window.__embprobeRan = false;
  const app = document.querySelector('[data-testid="stApp"]');
  if (window.__embprobeObserver) window.__embprobeObserver.disconnect();
  // A fast run flips the state to running and back before the callback: the old values tell it ran.
  window.__embprobeObserver = new MutationObserver((records) => {
    if (app.getAttribute('data-test-script-state') !== 'notRunning'
        || records.some(r => r.oldValue && r.oldValue !== 'notRunning')) window.__embprobeRan = true;
  });
  window.__embprobeObserver.observe(
    app, {attributes: true, attributeOldValue: true, attributeFilter: ['data-test-script-state']});
}"""
SETTLED_JS = """([needle, rerun]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (rerun && !window.__embprobeRan) return false;
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  if (document.querySelector('[data-testid="stException"], [data-testid="stAlertContentError"]')) return 'error';
  // every shown plotly chart drawn (its SVG made), not only the one the evidence is in; one in a closed
  // expander or a hidden tab has no box and may wait to draw until it is shown
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  if (charts.some(c => c.getClientRects().length && !c.querySelector('.main-svg'))) return false;
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  if (!needle) return true;
  // text of the page, including SVG text (chart titles, axis labels)
  return main.innerText.includes(needle)
    || [...main.querySelectorAll('svg text')].some(t => t.textContent.includes(needle));
}"""


def settle(page, needle: str, label: str, rerun: bool = False, timeout_ms: int | None = None) -> None:
    """Wait until the page is settled and shows ``needle`` (and, with ``rerun``, a script run began
    after :data:`ARM_JS`); fail loudly on an error box."""
    try:
        handle = page.wait_for_function(SETTLED_JS, arg=[needle, rerun], polling=20, timeout=timeout_ms or TIMEOUT_MS)
    except Exception as exc:  # say which step never settled, and on what
        raise RuntimeError(f"{label}: not settled on {needle!r} in {(timeout_ms or TIMEOUT_MS) / 1000:.0f} s") from exc
    if handle.json_value() == "error":
        text = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').first.inner_text()
        raise RuntimeError(f"{label}: the page shows an error: {text[:300]}")


@contextmanager
def new_visitor(browser, init_script: str | None = None) -> Iterator:
    """A new visitor's page: a fresh browser context (no session, no browser cache) at :data:`VIEWPORT`, with
    ``init_script`` run before the page's own; the context is closed after."""
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        if init_script:
            ctx.add_init_script(init_script)
        yield ctx.new_page()
    finally:
        ctx.close()


@contextmanager
def new_tab(ctx) -> Iterator:
    """A new tab of an open browser context: a new Streamlit session with the context's HTTP cache."""
    page = ctx.new_page()
    try:
        yield page
    finally:
        page.close()


def visit(browser, address: str, needle: str, label: str, returning=None) -> float:
    """Seconds from a new visitor's navigation to ``address`` to its settled page; with ``returning`` (a browser
    context that has been there before), a returning visitor's: a new tab of that context."""
    with new_tab(returning) if returning is not None else new_visitor(browser) as page:
        t0 = time.perf_counter()
        page.goto(address)
        settle(page, needle, label, timeout_ms=600_000)
        return time.perf_counter() - t0


def start_app(tmp: Path, app: Path = REPO / "app.py", log: str = "server.log"):
    """``app`` on its own server as the benches time it: no user models (an empty registry file in ``tmp``);
    (process, base URL), its output in ``tmp / log``."""
    return start_streamlit(tmp / log, env=server_env(EMBPROBE_MODELS=str(tmp / "m.toml")), app=app)


def start_floor(tmp: Path):
    """``bench/floor_app.py`` on its own server (:data:`FLOORS` are its pages); (process, base URL)."""
    return start_streamlit(tmp / "floor.log", app=REPO / "bench" / "floor_app.py")


def open_options(page, label: str, option: str) -> None:
    """Open the picker ``label`` and type ``option`` so it is in the list (the list is virtualised:
    options past the first few are not in the page until scrolled to). Untimed: what a person does
    before the action — the action is the click on the option (:func:`pick`)."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.click()
    page.keyboard.type(option)
    page.get_by_role("option", name=option, exact=True).wait_for()
    page.wait_for_timeout(250)  # the filtered list re-renders after typing: let it settle before the click


def pick(page, option: str) -> None:
    page.get_by_role("option", name=option, exact=True).click()


def slider_to(page, label: str, key: str, value: int) -> None:
    """Move the slider labelled ``label`` (widget key ``key``) to ``value`` with the keyboard, as a
    person does for one step (Home/End and arrows; committed when the keys are released)."""
    thumb = page.locator(f".st-key-{key} input[type='range']").first  # react-aria's hidden range input
    current = int(float(thumb.input_value()))
    thumb.focus()
    key_name = "ArrowRight" if value > current else "ArrowLeft"
    for _ in range(abs(value - current)):
        thumb.press(key_name)


def type_text(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")


# ---------------------------------------------------------------------------- pages
# Each scenario: (path, [(step name, action(page, i) -> needle)]). ``i`` counts repeats, so a step
# alternates between two values. Widget keys and labels are the pages' own (app_pages/*.py).


def attention_steps():
    def layer(page, i):
        value = 3 + i % 2
        slider_to(page, "Layer", "attn_layer", value)
        return f"minilm: layer {value}, head"

    def head_click(page, i):
        layer_, head = (4, 7) if i % 2 == 0 else (5, 2)
        page.locator(".st-key-attn_grid .scatterlayer .point").nth((layer_ - 1) * 12 + head - 1).click(force=True)
        return f"minilm: layer {layer_}, head {head}"

    queries = ("3: raised", "4: interest")

    def query(page, i):
        pick(page, queries[i % 2])
        return f"Query “{queries[i % 2].split(': ')[1]}”"

    return [
        ("layer slider", layer),
        ("head (grid click)", head_click),
        ("query picker", query, lambda page, i: open_options(page, "Query token", queries[i % 2])),
    ]


def polysemy_steps():
    def layer(page, i):
        value = 4 + i % 2
        slider_to(page, "Layer", "poly_layer", value)
        return f"layer {value}"

    def open_occurrences(page, i):
        page.get_by_role("combobox", name="Occurrence", exact=True).click()
        page.keyboard.press("ArrowDown" if i % 2 == 0 else "ArrowUp")

    def occurrence(page, i):
        page.keyboard.press("Enter")
        return ""

    def neighbours(page, i):
        value = 9 + i % 2
        slider_to(page, "Neighbours", "poly_k", value)
        return ""

    def new_word(page, i):
        word = (
            "plant",
            "interest",
            "line",
            "point",
            "place",
            "time",
            "way",
            "form",
            "work",
            "area",
            "side",
            "hand",
            "house",
            "power",
            "state",
            "court",
            "case",
            "party",
            "field",
            "game",
        )[i % 20]
        type_text(page, "Word (lemma)", word)
        return f"occurrences of “{word}” in SemCor"

    index = {True: "corpus index present", False: "no corpus index", None: "corpus index not checked"}
    return [
        ("layer slider", layer),
        ("occurrence picker", occurrence, open_occurrences),
        ("neighbours slider", neighbours),
        (f"new word ({index[CORPUS_INDEX.get(CORPUS_MODEL)]})", new_word),
    ]


def corpus_steps():
    """The Polysemy explorer's corpus search (``corpus=1``): another occurrence is a new query over every
    sense-tagged SemCor token at the layer (the caption names the query: "… to #2 bank")."""

    def occurrence(i: int) -> int:
        return 2 if i % 2 == 0 else 1  # the page opens on #1

    def open_list(page, i):
        box = page.get_by_role("combobox", name="Occurrence", exact=True)
        box.click()
        page.keyboard.type(f"#{occurrence(i)} ")  # only "#2 …" holds "#2 " (not "#12 …", "#20 …")
        page.get_by_role("option").first.wait_for()
        page.wait_for_timeout(250)

    def query(page, i):
        page.get_by_role("option").first.click()
        return f"to #{occurrence(i)} "

    return [("corpus search (another occurrence)", query, open_list)]


def space_steps():
    def neighbours(page, i):
        word = ("river", "money")[i % 2]
        type_text(page, "Word", word)
        return ""

    def k(page, i):
        slider_to(page, "Neighbours", "space_nn_k", 11 + i % 2)
        return ""

    return [("neighbours (new word)", neighbours), ("neighbours slider", k)]


def probes_steps():
    sets = ("senseval2", "ALL")

    def metric_set(page, i):
        pick(page, sets[i % 2])
        return f"on {sets[i % 2]}, by layer"

    return [
        ("evaluation-set picker (WSD)", metric_set, lambda page, i: open_options(page, "Evaluation set", sets[i % 2]))
    ]


def syntax_steps():
    def layer(page, i):
        value = 4 - i % 2  # the page opens on layer 3 (minilm's 7 // 2): 4, 3, 4, … (repeat 0 fits layer 4)
        slider_to(page, "Layer", "syn_layer", value)
        return f"minilm, layer {value}: word depths"

    return [("layer slider (trees)", layer)]


def models_steps():
    from models.registry import get_spec

    names = ("minilm", "glove-6b-50d")

    def model(page, i):
        pick(page, names[i % 2])
        return get_spec(names[i % 2]).description[:60]  # the card's caption (the JSON view splits its strings)

    return [("model picker", model, lambda page, i: open_options(page, "Model", names[i % 2]))]


def navigation_steps():
    """A page switch in an open app, what a daily user does most: a click on a page's sidebar link from the
    Models page (the way back to it is untimed). The frame and plotly.js are loaded by then; what is timed is the
    page's script on the server and its drawing in the browser."""
    pages = {p.url_path: p.title for p in nav_pages()}
    home = pages.pop("")

    def link(page, title: str):
        return page.locator('[data-testid="stSidebarNavLink"]', has_text=title).first

    def back(page, i):
        link(page, home).click()
        settle(page, SCENARIOS["models"][1], "page switch: back to Models")

    def switch(path: str, title: str):
        def act(page, i):
            link(page, title).click()
            return NEEDLES.get(path, title)

        return (f"page switch to {title}", act, back)

    return [switch(path, title) for path, title in pages.items()]


#: (address, the settled page's evidence, steps); "corpus" runs only when the corpus index exists.
SCENARIOS = {
    "models": ("", "Start here", models_steps),
    "attention": ("attention", "minilm: layer 2, head 1", attention_steps),
    "polysemy": ("polysemy", "occurrences of “bank” in SemCor", polysemy_steps),
    "embedding_space": ("embedding_space", "Neighbours (CSV)", space_steps),
    "probes": ("probes", "by layer", probes_steps),
    "syntax": ("syntax", "word depths", syntax_steps),  # the last of its three charts
    "corpus": ("polysemy?corpus=1", "have the query's sense", corpus_steps),
    "reproduce": ("reproduce", "Paper vs. ours", lambda: []),
    "navigation": ("", "Start here", navigation_steps),
}
#: A page's settled evidence for its first paint: the scenario's, else these, else the page's title.
NEEDLES = {path: needle for path, needle, _ in SCENARIOS.values() if "?" not in path} | {
    "layer_profile": "context-specific"  # the contextuality chart, beside the probe profile
}
CORPUS_MODEL = "minilm"  # the Polysemy explorer's default model
CORPUS_INDEX: dict[str, bool] = {}  # model -> whether the SemCor feature cache holds all its layers (main)


def corpus_index_present(model: str) -> bool:
    """Whether the WSD probe's SemCor feature cache (the corpus index) holds every layer of ``model``:
    then a new Polysemy word reads its vectors from it and the corpus search runs without a build."""
    from features import has_layers
    from models.registry import load_embedder
    from probes.tasks.wsd.sources import builtin_train

    emb = load_embedder(model)
    return has_layers(emb, builtin_train(None).feature_key, range(emb.num_layers))


# ---------------------------------------------------------------------------- runs

# The floor (bench/floor_app.py on its own server): Streamlit's own first paint, without the app.
FLOORS = {
    "floor: empty Streamlit page": ("", "One title and one paragraph"),
    "floor: one plotly chart": ("?chart=1", "Floor chart"),
    "floor: one chart in the app's frame": ("?chart=1&frame=1", "Floor chart"),
}


def app_pages() -> dict[str, tuple[str, str]]:
    """Every page of app.py's navigation: name (its script's, "models" for the default page) ->
    (address path, settled evidence)."""
    return {Path(p.script).stem: (p.url_path, NEEDLES.get(p.url_path, p.title)) for p in nav_pages()}


def rounds(names: list[str], repeats: int) -> Iterator[str]:
    """``names`` ``repeats`` times over, each round in its own order (shuffled, seeded by the round's number):
    no page is always visited right after the same one, and a rerun visits in the same order."""
    for round_ in range(repeats):
        order = list(names)
        random.Random(round_).shuffle(order)
        yield from order


def first_paints(
    browser, url: str, repeats: int, floor_url: str | None = None, returning: bool = False
) -> dict[str, list[float]]:
    """Per page of the navigation, a new visitor (fresh context: no session, no browser cache), ``repeats``
    rounds: the time to its first content (the page title drawn, from the navigation's start) and to the
    settled page; with ``floor_url``, the same for the floor pages (:data:`FLOORS`). Each round visits every
    page and floor once, in its own shuffled order (seeded by the round), so the k-th time of a page and of the
    floor saw the same load: ``latency_report.settle_rows`` pairs them.

    ``returning``: a returning visitor instead — a new tab (a new session) in one browser context that has
    opened every page and floor once before (untimed), so its HTTP cache holds Streamlit's and plotly.js's code;
    the steps are named with :data:`RETURNING` first."""
    pages = {name: (f"{url}/{path}", needle) for name, (path, needle) in app_pages().items()}
    if floor_url:
        pages |= {name: (f"{floor_url}/{query}", needle) for name, (query, needle) in FLOORS.items()}
    shared = browser.new_context(viewport=VIEWPORT) if returning else None
    if shared is not None:
        shared.add_init_script(FIRST_CONTENT_JS)
        for name, (address, needle) in pages.items():
            with new_tab(shared) as page:
                page.goto(address)
                settle(page, needle, f"first visit {name}")
    content: dict[str, list[float]] = {name: [] for name in pages}
    settled: dict[str, list[float]] = {name: [] for name in pages}
    for name in rounds(list(pages), repeats):
        address, needle = pages[name]
        with new_tab(shared) if shared is not None else new_visitor(browser, FIRST_CONTENT_JS) as page:
            t0 = time.perf_counter()
            page.goto(address)
            settle(page, needle, f"first paint {name}")
            settled[name].append(time.perf_counter() - t0)
            content[name].append(page.evaluate("() => window.__embprobeTitle") / 1000)
    if shared is not None:
        shared.close()
    out: dict[str, list[float]] = {}
    prefix = RETURNING if returning else ""
    for name in pages:
        suffix = "" if name == "models" else f": {name}"  # the landing page is "the" first paint
        out[f"{prefix}first content{suffix}"] = content[name]
        out[f"{prefix}first paint, settled{suffix}"] = settled[name]
    return out


def interactions(browser, url: str, repeats: int, only: set[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, (path, needle, steps) in SCENARIOS.items():
        if only and name not in only:
            continue
        if name == "corpus" and not CORPUS_INDEX.get(CORPUS_MODEL):
            print(f"corpus: skipped, no corpus index of {CORPUS_MODEL} (python -m probes wsd --model {CORPUS_MODEL})")
            continue
        ctx = browser.new_context(viewport=VIEWPORT)
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{url}/{path}")
        settle(page, needle, name, timeout_ms=600_000)
        for step, act, *prepare in steps():
            times = []
            for i in range(repeats + 1):  # the first is untimed: the step's own first use
                for before in prepare:  # e.g. open a picker: what a person does before the action
                    before(page, i)
                page.evaluate(ARM_JS)
                t0 = time.perf_counter()
                try:
                    evidence = act(page, i)
                except Exception as exc:  # name the step that could not be done
                    raise RuntimeError(f"{name}: {step} (repeat {i}): {str(exc)[:300]}") from exc
                settle(page, evidence, f"{name}: {step}", rerun=True)
                print(f"{name}: {step} {i}: {time.perf_counter() - t0:.2f} s", file=sys.stderr, flush=True)
                if i:
                    times.append(time.perf_counter() - t0)
            out[f"{name}: {step}"] = times
        ctx.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--only",
        default="",
        help=f"comma-separated interactions ({', '.join(SCENARIOS)}); 'none' for first paints only",
    )
    p.add_argument("--no-first-paint", action="store_true")
    p.add_argument(
        "--returning",
        action="store_true",
        help="first paints of a returning visitor (a new tab, the browser's cache warm) instead of a new one",
    )
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    only = {x for x in args.only.split(",") if x}
    if unknown := sorted(only - set(SCENARIOS) - {"none"}):  # silently skipped, it would time less than asked
        p.error(f"--only: no interaction {', '.join(map(repr, unknown))}; choose from {', '.join(SCENARIOS)}, none")
    if problem := chromium_problem():
        p.error(problem)
    info = machine()
    notes = []
    if not only or only & {"polysemy", "corpus"}:
        CORPUS_INDEX[CORPUS_MODEL] = corpus_index_present(CORPUS_MODEL)
        notes.append(
            f"The SemCor feature cache (the corpus index) {'holds' if CORPUS_INDEX[CORPUS_MODEL] else 'lacks'} "
            f"{CORPUS_MODEL}'s layers: a new Polysemy word "
            + ("reads its occurrences' vectors from it." if CORPUS_INDEX[CORPUS_MODEL] else "embeds its sentences.")
        )
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        proc, url = start_app(Path(tmp))
        floor_proc = floor_url = None
        try:
            if not args.no_first_paint:
                floor_proc, floor_url = start_floor(Path(tmp))
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                warm = browser.new_context(viewport=VIEWPORT).new_page()  # untimed: load models, read data
                visits = {name: (path, needle) for name, (path, needle) in app_pages().items()}
                visits |= {
                    name: (path, needle)
                    for name, (path, needle, _) in SCENARIOS.items()
                    if name != "corpus" or CORPUS_INDEX.get(CORPUS_MODEL)
                }
                for name, (path, needle) in visits.items():
                    warm.goto(f"{url}/{path}")
                    settle(warm, needle, f"warm-up {name}", timeout_ms=600_000)
                warm.context.close()
                times = {}
                if not args.no_first_paint:
                    times = first_paints(browser, url, args.repeats, floor_url, args.returning)
                times |= interactions(browser, url, args.repeats, only)
                browser.close()
        except BaseException:
            print((Path(tmp) / "server.log").read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            stop(proc)
            if floor_proc is not None:
                stop(floor_proc)
    print(ended(info, args.repeats))
    print(report(times) + "\n")
    print(settle_vs_floor(times) + "\n")
    print(section(info, times, notes))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": info,
                    "args": vars(args) | {"json": str(args.json)},
                    "times": times,
                    "notes": notes,
                    "settle_vs_floor": settle_rows(times) + settle_rows(times, returning=True),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
