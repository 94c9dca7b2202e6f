"""The app in a real browser: `streamlit run app.py` driven by headless Chromium via Playwright.

Opens every page, performs its main interaction, checks that no exception box or traceback
appears, and saves screenshots: to a temporary directory in a test run, to docs/screenshots/
(used in the README) with `make screenshots`. The server, browser and page fixtures are in
tests/conftest.py, the helpers in tests/browser_support.py.

Needs Debian's Chromium at /usr/bin/chromium (`make browser` / `.ci/run` install it). If it is
missing these tests FAIL with a clear message rather than skip, because CI installs it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import REPO, SCREENSHOTS_ENV, assert_clean, choose, open_page, set_text, shot, wait_idle

pytestmark = pytest.mark.browser

# ------------------------------------------------------------------------------------ pages
# expect(...) waits (up to WAIT_MS) for the app's rerun to show the result, so a slow machine
# does not make these tests flaky.
WAIT_MS = 120_000


def test_a_test_run_never_writes_into_the_repository(screenshots):
    """Screenshots go to a temp dir unless `make screenshots` asks for docs/screenshots/."""
    if os.environ.get(SCREENSHOTS_ENV):
        assert screenshots == Path(os.environ[SCREENSHOTS_ENV])
    else:
        assert REPO not in screenshots.resolve().parents


def test_models_page(page, server, screenshots):
    open_page(page, server, "")
    expect(page.get_by_role("heading", name="Models", exact=True)).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    # Main interaction: load GloVe; then Load is disabled and Unload enabled.
    choose(page, "Model", "glove-6b-50d")
    wait_idle(page)
    unload = page.get_by_role("button", name="Unload", exact=True)
    if unload.is_enabled():  # the session's server is shared: a page visited before may have loaded GloVe
        unload.click()
        expect(page.get_by_role("button", name="Load", exact=True)).to_be_enabled(timeout=WAIT_MS)
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.get_by_role("button", name="Unload", exact=True)).to_be_enabled(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    expect(page.get_by_role("button", name="Load", exact=True)).to_be_disabled()
    shot(page, screenshots, "models")


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
    expect(points.nth(9)).to_be_attached(timeout=WAIT_MS)  # its contextual vectors, projected
    assert_clean(page)
    open_page(page, server, "")
    expect(page.get_by_role("combobox", name="Registered model")).to_have_value("browser-bert")
    page.get_by_role("button", name="Remove", exact=True).click()
    wait_idle(page)
    assert_clean(page)
    expect(page.get_by_role("combobox", name="Registered model")).to_have_count(0)  # none left


def test_polysemy_page(page, server, screenshots):
    open_page(page, server, "polysemy")
    set_text(page, "Word (lemma)", "bank")
    expect(page.get_by_text("tagged occurrences of “bank” in SemCor")).to_be_visible(timeout=WAIT_MS)
    points = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .point")
    expect(points.nth(9)).to_be_attached(timeout=WAIT_MS)  # at least 10 occurrences drawn
    expect(page.get_by_text("Which layer separates the senses?")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, screenshots, "polysemy")


def test_back_leaves_a_page_in_one_step_and_undoes_a_change(page, server):
    """Each write of the URL was a history entry: opening Polysemy pushed one per parameter (10–14), so Back took
    ~10 presses to leave it, and Back after a change showed the new word still. Now a run is one entry, and Back
    restores the word the page showed before."""
    open_page(page, server, "models")
    start = page.evaluate("history.length")
    # the sidebar link as a person clicks it (in-app navigation; playwright's own click waits on an "inert" sidebar)
    page.evaluate("""document.querySelector('[data-testid="stSidebarNav"] a[href$="/polysemy"]').click()""")
    wait_idle(page)
    expect(page.get_by_label("Word (lemma)", exact=True)).to_be_visible(timeout=WAIT_MS)
    # one entry: the page's first write had been a second one, so Back after the click showed Polysemy again
    assert page.evaluate("history.length") - start == 1 and "?" not in page.url
    page.go_back()
    wait_idle(page)
    assert "polysemy" not in page.url  # the Models page (the app's default page: "/")
    expect(page.get_by_role("heading", name="Models", exact=True)).to_be_visible(timeout=WAIT_MS)
    open_page(page, server, "polysemy?word=play")
    set_text(page, "Word (lemma)", "interest")
    assert "word=interest" in page.url
    page.go_back()
    wait_idle(page)
    assert "word=play" in page.url
    expect(page.get_by_label("Word (lemma)", exact=True)).to_have_value("play", timeout=WAIT_MS)
    expect(page.get_by_text("tagged occurrences of “play” in SemCor")).to_be_visible(timeout=WAIT_MS)
    assert_clean(page)


def test_embedding_space_page(page, server, screenshots):
    open_page(page, server, "embedding_space")
    set_text(page, "Word", "river")
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible(timeout=WAIT_MS)
    assert_clean(page)
    page.get_by_role("tab", name="Map a word list").click()
    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, screenshots, "embedding_space")


def test_attention_page(page, server, screenshots):
    open_page(page, server, "attention")
    set_text(page, "Sentence", "The animal didn't cross the street because it was too tired.")
    expect(page.get_by_text("over 12 tokens")).to_be_visible(timeout=WAIT_MS)
    # All 6 × 12 heads in one image (one heatmap trace), one transparent click target per head.
    grid = page.locator('[data-testid="stPlotlyChart"]').first
    expect(grid.locator(".hm image")).to_have_count(1, timeout=WAIT_MS)
    expect(grid.locator(".scatterlayer .point")).to_have_count(72)
    wait_idle(page)
    assert_clean(page)
    shot(page, screenshots, "attention")


def test_attention_clicked_grid_cell_opens_its_head_and_the_link_restores_it(page, server, browser):
    open_page(page, server, "attention")
    expect(page.get_by_text("minilm: layer 2, head 1")).to_be_visible(timeout=WAIT_MS)
    grid = page.locator('[data-testid="stPlotlyChart"]').first
    grid.locator(".scatterlayer .point").nth(3 * 12 + 6).click(force=True)  # layer 4, head 7
    expect(page.get_by_text("minilm: layer 4, head 7")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    assert "layer=4" in page.url and "head=7" in page.url
    # The link opens the same view in a fresh browser context (no shared session state).
    choose(page, "Query token", "3: raised")
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        fresh = ctx.new_page()
        fresh.set_default_timeout(WAIT_MS)
        fresh.goto(page.url)
        wait_idle(fresh)
        expect(fresh.get_by_text("minilm: layer 4, head 7")).to_be_visible(timeout=WAIT_MS)
        expect(fresh.get_by_text("Query “raised”", exact=False)).to_be_visible()
    finally:
        ctx.close()


def test_attention_two_models_side_by_side(page, server):
    open_page(page, server, "attention?compare=two+models&model_b=gpt-small")
    expect(page.get_by_role("heading", name="Side by side")).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text("Layer (gpt-small)")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    # Both panels draw the shared sentence's words (word view: the same tokens in both).
    for panel in (page.locator(".st-key-attn_side_a"), page.locator(".st-key-attn_side_b")):
        expect(panel.locator(".textpoint").filter(has_text="river")).to_have_count(2)


def test_an_svg_download_is_a_valid_svg(page, server, tmp_path):
    import xml.etree.ElementTree as ET

    open_page(page, server, "attention")
    expect(page.get_by_text("minilm: layer 2, head 1")).to_be_visible(timeout=WAIT_MS)
    chart = page.locator('[data-testid="stPlotlyChart"]').nth(1)  # the open head's map
    chart.hover()
    with page.expect_download(timeout=WAIT_MS) as info:
        chart.locator('.modebar-btn[data-title*="Download plot"]').click()
    download = info.value
    assert download.suggested_filename == "attention-minilm-L2-H1.svg"
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg") and float(root.get("width")) == 1200
    assert "layer 2, head 1" in path.read_text()


def test_attention_user_html_is_text(page, server):
    """HTML typed by the user is shown as text and never executed; a 10,000-word paste is cut."""
    open_page(page, server, "attention")
    set_text(page, "Sentence", "<script>alert(1)</script> <b>bold</b> **stars** مرحبا 👍🏽")
    page.get_by_text("Tokens the model saw").click()  # the box fills when opened
    tokens = page.locator('[data-testid="stExpander"] [data-testid="stCode"]').first
    # The tokens are shown as literal characters in a code block ...
    expect(tokens).to_contain_text("script", timeout=WAIT_MS)
    text = tokens.text_content()  # the model's own pieces (the word view's words hid an [UNK]: round ten)
    assert "<" in text and "م | ##ر" in text and "[UNK]" in text
    # ... and nothing was rendered as HTML (no <b> element, no alert() dialog).
    assert page.locator("b:text-is('bold')").count() == 0
    wait_idle(page)
    assert_clean(page)
    set_text(page, "Sentence", "word " * 10_000)
    expect(page.get_by_text("were cut to their first 40 words")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)


def test_probes_page(page, server, screenshots):
    open_page(page, server, "probes")
    assert_clean(page)
    if page.get_by_role("combobox", name="Results from", exact=True).count():
        expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible(timeout=WAIT_MS)
        shot(page, screenshots, "probes_saved")  # the layer-probe comparison of the committed results
    # Main interaction: a quick POS probe on MiniLM's layers, with a progress bar.
    page.get_by_role("tab", name="Run a quick probe").click()
    choose(page, "Probe", "POS — linear probe (CoNLL-2000)")
    choose(page, "Model", "minilm")
    page.get_by_role("button", name="Run probe").click()
    expect(page.get_by_text("POS on minilm, first 20 sentences")).to_be_visible(timeout=2 * WAIT_MS)
    expect(page.get_by_text("POS: accuracy on conll2000-test (limit 20), by layer").last).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    shot(page, screenshots, "probes")


def test_reproduce_page(page, server, screenshots):
    open_page(page, server, "reproduce")
    expect(page.get_by_text("Paper, Table 5").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator('[data-testid="stDownloadButton"]').first).to_be_visible()
    assert_clean(page)
    shot(page, screenshots, "reproduce")
