"""The app in a real browser: `streamlit run app.py` driven by headless Chromium via Playwright.

Opens every page, performs its main interaction, checks that no exception box or traceback
appears, and saves screenshots to docs/screenshots/ (used in the README).

Needs Debian's Chromium at /usr/bin/chromium (`make browser` / `.ci/run` install it). If it is
missing these tests FAIL with a clear message rather than skip, because CI installs it.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
SHOTS = Path(os.environ.get("EMBPROBE_SCREENSHOTS", REPO / "docs" / "screenshots"))
CHROMIUM = os.environ.get("EMBPROBE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1440, "height": 1000}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A `streamlit run app.py` subprocess on a free localhost port; yields its base URL."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"),
           "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
           "--global.developmentMode", "false"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200 and resp.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail(f"streamlit did not become healthy in 90 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        server_log = log_path.read_text() if log_path.exists() else ""
        # The app logs tracebacks to the server log on purpose; print it when a test failed.
        print("\n--- streamlit server log (tail) ---\n" + server_log[-4000:])


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}. The browser tests need Debian's Chromium: "
            "run `make browser` (apt-get install -y chromium) or set EMBPROBE_CHROMIUM to its path."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser, server):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs   # an alert() from rendered user HTML would land here
    yield pg
    ctx.close()


# ------------------------------------------------------------------------------------ helpers

def wait_idle(pg, timeout_s: float = 120) -> None:
    """Wait until the script run triggered by the last action has finished."""
    app = pg.locator('[data-testid="stApp"]')
    app.wait_for()
    # A rerun starts a moment after the interaction; give it that moment, then wait for the end.
    try:
        pg.wait_for_selector('[data-testid="stApp"]:not([data-test-script-state="notRunning"])', timeout=1500)
    except Exception:  # noqa: BLE001 — it may already have finished
        pass
    pg.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_s * 1000)
    # Widgets, tables and charts load their JavaScript lazily and show a skeleton until then.
    pg.wait_for_function("() => document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0",
                         timeout=timeout_s * 1000)
    pg.wait_for_timeout(500)   # let plotly finish drawing


def open_page(pg, server: str, path: str) -> None:
    pg.goto(f"{server}/{path}")
    wait_idle(pg)


def assert_clean(pg) -> None:
    """No exception box, no traceback, no error alert on the page; no alert() dialog fired."""
    assert pg.locator('[data-testid="stException"]').count() == 0, "an exception box is shown"
    body = pg.locator("body").inner_text()
    assert "Traceback" not in body, "a traceback is shown"
    errors = pg.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, f"an error is shown: {errors.first.inner_text()}"
    assert not pg.dialogs, f"a JavaScript dialog fired: {pg.dialogs}"


def shot(pg, name: str, max_height: int = 2400) -> Path:
    """Screenshot of the whole page: the main area scrolls inside the app, so the viewport is
    grown to the content's height first (capped), then restored."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    height = pg.evaluate("() => document.querySelector('[data-testid=\"stMainBlockContainer\"]').scrollHeight")
    pg.set_viewport_size({"width": VIEWPORT["width"], "height": int(min(max(height + 40, VIEWPORT["height"]), max_height))})
    pg.wait_for_timeout(800)   # plotly redraws on resize
    pg.screenshot(path=str(path))
    pg.set_viewport_size(VIEWPORT)
    assert path.stat().st_size > 10_000
    return path


def choose(pg, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label``."""
    box = pg.get_by_role("combobox", name=label, exact=True)
    box.click()
    pg.get_by_role("option", name=option, exact=True).click()
    wait_idle(pg)


def set_text(pg, label: str, value: str) -> None:
    box = pg.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter" if box.evaluate("e => e.tagName") == "INPUT" else "Control+Enter")
    wait_idle(pg)


# ------------------------------------------------------------------------------------ pages
# expect(...) waits (up to WAIT_MS) for the app's rerun to show the result, so a slow machine
# does not make these tests flaky.
WAIT_MS = 120_000


def test_models_page(page, server):
    open_page(page, server, "")
    expect(page.get_by_role("heading", name="Models", exact=True)).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    # Main interaction: load GloVe; then Load is disabled and Unload enabled.
    choose(page, "Model", "glove-6b-50d")
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.get_by_role("button", name="Unload", exact=True)).to_be_enabled(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    expect(page.get_by_role("button", name="Load", exact=True)).to_be_disabled()
    shot(page, "models")


def test_models_page_adds_a_local_model_that_the_polysemy_page_offers(page, server, tmp_path):
    from models.tiny import make_tiny_checkpoint

    folder = make_tiny_checkpoint("bert", tmp_path / "browser-bert", layers=2, hidden=32, heads=2)
    open_page(page, server, "")
    page.get_by_label("Name", exact=True).fill("browser-bert")
    page.get_by_label("Folder, file or hub id", exact=True).fill(str(folder))
    page.get_by_role("button", name="Check and add").click()
    expect(page.get_by_text("Added browser-bert")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    open_page(page, server, "polysemy")
    choose(page, "Model", "browser-bert")
    points = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .point")
    expect(points.nth(9)).to_be_attached(timeout=WAIT_MS)   # its contextual vectors, projected
    assert_clean(page)
    open_page(page, server, "")
    expect(page.get_by_role("combobox", name="Registered model")).to_have_value("browser-bert")
    page.get_by_role("button", name="Remove", exact=True).click()
    wait_idle(page)
    assert_clean(page)
    expect(page.get_by_role("combobox", name="Registered model")).to_have_count(0)   # none left


def test_polysemy_page(page, server):
    open_page(page, server, "polysemy")
    set_text(page, "Word (lemma)", "bank")
    expect(page.get_by_text("tagged occurrences of “bank” in SemCor")).to_be_visible(timeout=WAIT_MS)
    points = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .point")
    expect(points.nth(9)).to_be_attached(timeout=WAIT_MS)   # at least 10 occurrences drawn
    expect(page.get_by_text("Which layer separates the senses?")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, "polysemy")


def test_embedding_space_page(page, server):
    open_page(page, server, "embedding_space")
    set_text(page, "Word", "river")
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible(timeout=WAIT_MS)
    assert_clean(page)
    page.get_by_role("tab", name="Map a word list").click()
    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, "embedding_space")


def test_attention_page(page, server):
    open_page(page, server, "attention")
    set_text(page, "Sentence", "The animal didn't cross the street because it was too tired.")
    expect(page.get_by_text("over 12 tokens")).to_be_visible(timeout=WAIT_MS)
    # 6 layers × 12 heads = 72 heatmaps in the grid (plotly draws each as an image).
    heatmaps = page.locator('[data-testid="stPlotlyChart"]').first.locator(".hm image")
    expect(heatmaps).to_have_count(72, timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, "attention")


def test_attention_user_html_is_text(page, server):
    """HTML typed by the user is shown as text and never executed; a 10,000-word paste is cut."""
    open_page(page, server, "attention")
    set_text(page, "Sentence", "<script>alert(1)</script> <b>bold</b> **stars** مرحبا 👍🏽")
    tokens = page.locator('[data-testid="stExpander"] [data-testid="stCode"]').first
    # The tokens are shown as literal characters in a code block ...
    expect(tokens).to_contain_text("script", timeout=WAIT_MS)
    text = tokens.text_content()
    assert "<" in text and "مرحبا" in text and "👍🏽" in text
    # ... and nothing was rendered as HTML (no <b> element, no alert() dialog).
    assert page.locator("b:text-is('bold')").count() == 0
    wait_idle(page)
    assert_clean(page)
    set_text(page, "Sentence", "word " * 10_000)
    expect(page.get_by_text("were cut to their first 40 words")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)


def test_probes_page(page, server):
    open_page(page, server, "probes")
    assert_clean(page)
    if page.get_by_role("combobox", name="Results from", exact=True).count():
        expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible(timeout=WAIT_MS)
        shot(page, "probes_saved")   # the layer-probe comparison of the committed results
    # Main interaction: a quick POS probe on MiniLM's layers, with a progress bar.
    page.get_by_role("tab", name="Run a quick probe").click()
    choose(page, "Probe", "POS — linear probe (CoNLL-2000)")
    choose(page, "Model", "minilm")
    page.get_by_role("button", name="Run probe").click()
    expect(page.get_by_text("POS on minilm, first 20 sentences")).to_be_visible(timeout=2 * WAIT_MS)
    expect(page.get_by_text("POS: accuracy on conll2000-test, by layer").last).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, "probes")


def test_reproduce_page(page, server):
    open_page(page, server, "reproduce")
    expect(page.get_by_text("Paper, Table 5").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator('[data-testid="stDownloadButton"]').first).to_be_visible()
    assert_clean(page)
    shot(page, "reproduce")
