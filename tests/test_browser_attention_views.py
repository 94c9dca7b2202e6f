"""The Attention page's bertviz views in a real browser (fixtures in tests/conftest.py): a click on a token of
the line view focuses it and goes into the URL, the Neurons tab draws, and the "Units" and "Side by side"
controls are not cut at 800–1280 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser_support import assert_clean, shot, wait_idle

pytestmark = pytest.mark.browser
WAIT_MS = 120_000


def open_page(page, server: str, path: str) -> None:
    """The page, waited for longer than usual: a fresh server's first run loads MiniLM beside the
    WordNet/SemCor warm-up, minutes on a busy 2-core machine."""
    page.goto(f"{server}/{path}")
    wait_idle(page, timeout_s=400)


def test_a_click_on_a_token_of_the_line_view_focuses_it(page, server, screenshots):
    open_page(page, server, "attention")
    lines = page.locator(".st-key-attn_head_plot_lines")
    expect(lines.locator(".gtitle").filter(has_text="Line view, layer 2")).to_be_visible(timeout=WAIT_MS)
    tokens = lines.locator(".scatterlayer .trace")  # the last two traces: the queries (left), the keys (right)
    right = tokens.last.locator(".point")
    expect(right).to_have_count(15)  # the sentence's 15 words
    right.nth(11).click(force=True)  # "river", as a key
    expect(page.get_by_role("combobox", name="Key token")).to_have_value("12: river", timeout=WAIT_MS)
    wait_idle(page)
    assert "focus=key" in page.url and "key=11" in page.url
    tokens.nth(-2).locator(".point").nth(1).click(force=True)  # "bank", as a query
    expect(page.get_by_role("combobox", name="Query token")).to_have_value("2: bank", timeout=WAIT_MS)
    wait_idle(page)
    assert "focus=query" in page.url and "query=1" in page.url
    assert_clean(page)
    shot(page, screenshots, "attention_lines")


CLIPPED_JS = (
    "b => { const r = b.getBoundingClientRect(); let p = b.parentElement; while (p) { const s = "
    "getComputedStyle(p); if (s.overflow !== 'visible' || s.overflowX !== 'visible') { const q = "
    "p.getBoundingClientRect(); if (r.right > q.right + 0.5 || r.left < q.left - 0.5) return true; } "
    "p = p.parentElement; } return b.scrollWidth > b.clientWidth + 1 || r.right > window.innerWidth; }"
)


@pytest.mark.parametrize("width", [800, 1024, 1280])
def test_the_units_and_side_by_side_controls_show_every_option_whole(page, server, width):
    """At an 800-px window the two controls' fixed columns cut "subwords" and "two layers"; they now wrap."""
    page.set_viewport_size({"width": width, "height": 900})
    open_page(page, server, "attention?compare=two+models")
    options = {"Units": ("words", "subwords"), "Side by side": ("off", "two models", "two layers")}
    for group, names in options.items():  # short labels on the buttons; the URL keeps the names
        control = page.get_by_role("radiogroup", name=group)
        for option in names:
            button = control.get_by_role("radio", name=option, exact=True)  # a segmented control: a radio each
            expect(button).to_be_visible(timeout=WAIT_MS)
            assert not button.evaluate(CLIPPED_JS), f"{group}: the {option!r} option is cut at {width} px"
    second = page.get_by_role("combobox", name="Second model")
    expect(second).to_be_visible(timeout=WAIT_MS)
    assert not second.evaluate(CLIPPED_JS), f"the second model's picker is cut at {width} px"


def test_the_neurons_tab_draws_its_two_charts(page, server, screenshots):
    open_page(page, server, "attention?tab=Neurons&query=1&key=11")
    expect(page.get_by_text("Check: softmax(q·k × scale)", exact=False)).to_be_visible(timeout=WAIT_MS)
    pair = page.locator(".st-key-attn_neuron_pair")
    expect(pair.locator(".gtitle")).to_contain_text("“bank” → “river”", timeout=WAIT_MS)
    expect(page.locator(".st-key-attn_neuron_keys .bars .point")).to_have_count(17)  # [CLS], 15 one-piece words, [SEP]
    wait_idle(page)
    assert_clean(page)
    shot(page, screenshots, "attention_neurons")
