"""The app in a real browser, shared by the browser tests and the browser benchmarks.

- :func:`streamlit_command` — the one ``streamlit run app.py`` command line (headless, localhost,
  no file watcher, no telemetry); :func:`start_streamlit` / :func:`stop` run it on a free port and
  wait for ``/_stcore/health``.
- ``CHROMIUM`` / ``CHROMIUM_ARGS`` / :func:`launch_chromium` — Debian's headless Chromium for Playwright.
- Page helpers: :func:`wait_idle` (the script run triggered by the last action has finished and
  every lazy element is drawn), :func:`open_page`, :func:`assert_clean`, :func:`choose`,
  :func:`set_text`, :func:`shot`.

Screenshots go to ``$EMBPROBE_SCREENSHOTS`` when it is set (``make screenshots`` sets it to
docs/screenshots/), else to a temporary directory: a test run never rewrites tracked files.
The pytest fixtures built on these (``server``, ``browser``, ``page``, ``screenshots``) are in
tests/conftest.py.
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("EMBPROBE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1440, "height": 1000}
SCREENSHOTS_ENV = "EMBPROBE_SCREENSHOTS"
# The tests' corpus searches run over SemCor's first 6,200 sentences (``$EMBPROBE_CORPUS_LIMIT``), a sixth of them:
# they hold 12 of its 20 money-bank occurrences (the twelfth at index 6,104). The full index's build took 700 s of a
# 21-minute CI run on 2 cores (docs/benchmarks.md). ``make screenshots`` searches all of SemCor.
TEST_CORPUS_LIMIT = 6200


def corpus_limit_env(name: str) -> dict[str, str]:
    """``{name: TEST_CORPUS_LIMIT}`` (``name``: the app's limit variable) unless the environment sets it
    already (to empty: all of SemCor)."""
    return {} if name in os.environ else {name: str(TEST_CORPUS_LIMIT)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int, python: str = sys.executable, app: Path = REPO / "app.py") -> list[str]:
    """``streamlit run app.py`` on ``127.0.0.1:port``: headless, no file watcher, no usage stats."""
    return [
        python,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--global.developmentMode",
        "false",
    ]


def server_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", **extra}


def start_streamlit(
    log_path: Path, *, env: dict[str, str] | None = None, timeout_s: float = 120, app: Path = REPO / "app.py"
) -> tuple[subprocess.Popen, str]:
    """Start the app (or another script, ``app``) on a free port, its output to ``log_path``;
    (process, base URL) once healthy.

    Raises RuntimeError (with the log's tail) when it exits or is not healthy in ``timeout_s``.
    """
    port = free_port()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            streamlit_command(port, app=app), cwd=REPO, env=env or server_env(), stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200 and resp.read().strip() == b"ok":
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            code = proc.poll()
            stop(proc)
            why = f"exited with {code}" if code is not None else f"was not healthy in {timeout_s:.0f} s"
            raise RuntimeError(f"streamlit {why}:\n{Path(log_path).read_text()[-3000:]}")
        time.sleep(0.25)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def chromium_problem() -> str | None:
    if Path(CHROMIUM).is_file() or shutil.which(CHROMIUM):
        return None
    return (
        f"Chromium not found at {CHROMIUM}. The browser tests need Debian's Chromium: "
        "run `make browser` (apt-get install -y chromium) or set EMBPROBE_CHROMIUM to its path."
    )


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def screenshots_dir(fallback: Path) -> Path:
    """``$EMBPROBE_SCREENSHOTS`` when set (``make screenshots``), else ``fallback`` (a temp dir)."""
    return Path(os.environ.get(SCREENSHOTS_ENV) or fallback)


# ------------------------------------------------------------------------------------ page helpers


def wait_idle(pg, timeout_s: float = 120) -> None:
    """Wait until the script run triggered by the last action has finished."""
    pg.locator('[data-testid="stApp"]').wait_for()
    # A rerun starts a moment after the interaction; give it that moment, then wait for the end.
    with contextlib.suppress(Exception):  # it may already have finished
        pg.wait_for_selector('[data-testid="stApp"]:not([data-test-script-state="notRunning"])', timeout=1500)
    pg.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_s * 1000)
    # Widgets, tables and charts load their JavaScript lazily and show a skeleton until then.
    pg.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0", timeout=timeout_s * 1000
    )
    pg.wait_for_timeout(500)  # let plotly finish drawing


def open_page(pg, server: str, path: str) -> None:
    pg.goto(f"{server}/{path}")
    wait_idle(pg)


def upload_projector_tsv(pg, server: str, tmp: Path) -> None:
    """Open the projector on "my vectors (TSV)" and upload 12 three-dimensional points with a word and a
    group (odd/even) column of metadata."""
    vectors, meta = tmp / "vectors.tsv", tmp / "metadata.tsv"
    vectors.write_text("".join(f"{i}\t{i % 3}\t{(i * 7) % 5}\n" for i in range(12)))
    meta.write_text("word\tgroup\n" + "".join(f"w{i}\t{'odd' if i % 2 else 'even'}\n" for i in range(12)))
    open_page(pg, server, "embedding_space?tab=Projector&pj_source=my+vectors+%28TSV%29")
    inputs = pg.locator('[data-testid="stFileUploaderDropzoneInput"]')
    inputs.nth(0).set_input_files(str(vectors))
    wait_idle(pg)
    inputs.nth(1).set_input_files(str(meta))
    wait_idle(pg)


def assert_clean(pg) -> None:
    """No exception box, no traceback, no error alert on the page; no alert() dialog fired."""
    assert pg.locator('[data-testid="stException"]').count() == 0, "an exception box is shown"
    body = pg.locator("body").inner_text()
    assert "Traceback" not in body, "a traceback is shown"
    errors = pg.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, f"an error is shown: {errors.first.inner_text()}"
    assert not getattr(pg, "dialogs", []), f"a JavaScript dialog fired: {pg.dialogs}"


def shot(pg, directory: Path, name: str, max_height: int = 2400) -> Path:
    """Screenshot of the whole page: the main area scrolls inside the app, so the viewport is
    grown to the content's height first (capped), then restored."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    height = pg.evaluate("() => document.querySelector('[data-testid=\"stMainBlockContainer\"]').scrollHeight")
    pg.set_viewport_size(
        {"width": VIEWPORT["width"], "height": int(min(max(height + 40, VIEWPORT["height"]), max_height))}
    )
    pg.wait_for_timeout(800)  # plotly redraws on resize
    pg.screenshot(path=str(path))
    pg.set_viewport_size(VIEWPORT)
    assert path.stat().st_size > 10_000
    return path


def choose(pg, label: str, option: str, nth: int = 0, attempts: int = 3) -> None:
    """Pick ``option`` in the (``nth``) selectbox labelled ``label``: typed first (the list is virtualised:
    an option past the first few is not in the page until scrolled to), and opened again if a rerun that
    was still under way closed the list."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    wait_idle(pg)
    box = pg.get_by_role("combobox", name=label, exact=True).nth(nth)
    for attempt in range(attempts):
        box.click()
        pg.keyboard.type(option)
        try:
            pg.get_by_role("option", name=option, exact=True).click(timeout=20_000)
            break
        except PlaywrightTimeoutError:
            if attempt == attempts - 1:
                raise
            pg.keyboard.press("Escape")
            wait_idle(pg)
    wait_idle(pg)


def set_text(pg, label: str, value: str) -> None:
    box = pg.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter" if box.evaluate("e => e.tagName") == "INPUT" else "Control+Enter")
    wait_idle(pg)


# ------------------------------------------------------------------------------------ the app's pages


@dataclass(frozen=True)
class NavPage:
    """One page of app.py's ``st.navigation``: its script, title and address (``""``: the default page)."""

    script: str
    title: str
    url_path: str


def nav_pages(app: Path = REPO / "app.py") -> list[NavPage]:
    """Every ``st.Page("app_pages/x.py", title=..., default=..., url_path=...)`` of ``app``, in order.

    Read from the source (not by running it: that needs a Streamlit runtime), so a page added to the
    navigation is walked by the browser tests and timed by the benchmark without listing it again. The
    address follows Streamlit's rule: ``url_path`` when given, else the script's name; the default page's is "".
    """
    pages: list[tuple[tuple[int, int], NavPage]] = []
    for node in ast.walk(ast.parse(app.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page" and node.args):
            continue
        kwargs = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
        script = node.args[0].value
        url_path = "" if kwargs.get("default") else kwargs.get("url_path") or Path(script).stem
        title = kwargs.get("title") or Path(script).stem
        pages.append(((node.lineno, node.col_offset), NavPage(script, title, url_path)))
    return [page for _, page in sorted(pages)]  # ast.walk is breadth-first: back to the source's order
