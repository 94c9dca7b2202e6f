"""The Polysemy explorer and the Embedding space in a real browser (headless Chromium, Playwright):
a shared link restores the view in a fresh browser context; two models side by side; corpus neighbours
of "bank" at MiniLM layer 6 are mostly of its sense; a chart's SVG download is a valid SVG.

Uses the shared ``server``/``browser``/``page`` fixtures (tests/conftest.py); screenshots only go to the
``screenshots`` fixture's directory (a temp dir unless ``make screenshots``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser_support import VIEWPORT, assert_clean, open_page, set_text, shot, upload_projector_tsv, wait_idle

pytestmark = pytest.mark.browser
WAIT_MS = 240_000
MONEY_BANK = "bank%1:14:00::"


def plot_titles(pg) -> list[str]:
    return [t.text_content() or "" for t in pg.locator('[data-testid="stPlotlyChart"] .gtitle').all()]


def test_a_shared_link_restores_the_polysemy_view_in_a_fresh_browser(page, server, browser) -> None:
    open_page(page, server, "polysemy?layer=2")
    set_text(page, "Word (lemma)", "interest")
    expect(page.get_by_text("tagged occurrences of “interest” in SemCor")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    params = parse_qs(urlparse(page.url).query)
    assert params["word"] == ["interest"] and params["layer"] == ["2"] and params["model"] == ["minilm"]
    title = next(t for t in plot_titles(page) if "interest" in t)

    fresh = browser.new_context(viewport=VIEWPORT)
    try:
        other = fresh.new_page()
        other.set_default_timeout(WAIT_MS)
        other.goto(page.url)
        wait_idle(other)
        expect(other.get_by_text("tagged occurrences of “interest” in SemCor")).to_be_visible(timeout=WAIT_MS)
        expect(other.get_by_label("Word (lemma)", exact=True)).to_have_value("interest")
        assert title in plot_titles(other), (title, plot_titles(other))  # same word, model, layer, projection
        assert_clean(other)
    finally:
        fresh.close()


def test_two_models_side_by_side_share_the_word(page, server, screenshots) -> None:
    open_page(page, server, "polysemy?compare=two+models&model_b=glove-6b-50d&word=bank")
    expect(page.locator('[data-testid="stPlotlyChart"] .gtitle').nth(1)).to_be_attached(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    titles = [t for t in plot_titles(page) if "“bank”" in t]
    assert any("minilm" in t for t in titles) and any("glove-6b-50d" in t for t in titles), titles
    expect(page.get_by_text("glove-6b-50d is a static model")).to_be_visible()
    # the two plots start level: the static model's panel has no layer slider, and its plot sat 84 px higher
    tops = page.evaluate(
        "[...document.querySelectorAll('[data-testid=\"stPlotlyChart\"]')].slice(0, 2)"
        ".map(e => e.getBoundingClientRect().top)"
    )
    assert abs(tops[0] - tops[1]) <= 8, tops
    shot(page, screenshots, "polysemy_side_by_side")


def test_corpus_neighbours_of_bank_at_minilm_layer_6_are_mostly_its_sense(page, server, screenshots) -> None:
    from corpora.semcor import load_semcor
    from viz.polysemy import build_lemma_index, semcor_occurrences

    sentences, _ = load_semcor()
    occs, _ = semcor_occurrences(sentences, build_lemma_index(sentences), "bank", "noun", cap=120)
    pick = next(i for i, o in enumerate(occs) if o.keys[0] == MONEY_BANK)
    open_page(page, server, f"polysemy?model=minilm&word=bank&pos=noun&layer=6&pick={pick}&corpus=1")
    build = page.get_by_role("button", name="Build the SemCor index for minilm")
    if build.count():
        build.click()
    share = page.get_by_text(re.compile(r"have the query's sense"))
    expect(share).to_be_visible(timeout=3 * WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    percent = int(re.search(r"(\d+)%", share.inner_text()).group(1))
    assert percent > 50, share.inner_text()
    shot(page, screenshots, "polysemy_corpus_search")


def test_svg_download_of_a_chart_is_valid_svg(page, server) -> None:
    open_page(page, server, "embedding_space?tab=Map+a+word+list")
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    expect(chart).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    chart.hover()
    with page.expect_download(timeout=WAIT_MS) as info:
        chart.locator('.modebar-btn[data-title^="Download plot"]').first.click()
    download = info.value
    assert download.suggested_filename.endswith(".svg"), download.suggested_filename
    text = Path(download.path()).read_text(encoding="utf-8")
    root = ET.fromstring(text)  # well-formed XML ...
    assert root.tag.endswith("svg") and "king" in text  # ... an <svg> with the map's words
    assert_clean(page)


def test_projector_draws_uploaded_vectors_and_metadata(page, server, tmp_path) -> None:
    upload_projector_tsv(page, server, tmp_path)
    expect(page.get_by_text(re.compile(r"vectors\.tsv: PCA of 12 points"))).to_be_attached(timeout=WAIT_MS)
    points = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .point")
    expect(points).to_have_count(12, timeout=WAIT_MS)
    assert_clean(page)


def test_polysemy_colours_an_uploaded_lexical_sample_by_its_labels(page, server, tmp_path) -> None:
    sample = tmp_path / "bank-sample.tsv"
    lines = [
        "She paid the cheque into the bank .\t6\tFINANCE",
        "The bank raised its rates .\t1\tFINANCE",
        "He robbed a bank downtown .\t3\tFINANCE",
        "We fished from the bank of the river .\t4\tRIVER",
        "The river bank was muddy .\t2\tRIVER",
        "Reeds grew along the bank .\t4\tRIVER",
    ]
    sample.write_text("\n".join(lines) + "\n")
    open_page(page, server, "polysemy?source=upload&word=bank")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(sample))
    wait_idle(page)
    expect(page.get_by_text("6 occurrences of “bank” in bank-sample.tsv")).to_be_visible(timeout=WAIT_MS)
    legend = page.locator('[data-testid="stPlotlyChart"]').first.locator(".legendtext")
    expect(legend.filter(has_text="FINANCE")).to_have_count(1, timeout=WAIT_MS)
    expect(legend.filter(has_text="RIVER")).to_have_count(1)
    assert_clean(page)
