"""Issue 30, "Panels that talk", in a real browser: a click on a projector point selects it (the URL's
``pj_pick``, the selected point's line and its nearest neighbours in the original space).

Uses the shared ``server``/``page`` fixtures (tests/conftest.py), as ``tests/test_browser_explore.py``.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser_support import assert_clean, upload_projector_tsv, wait_idle

pytestmark = pytest.mark.browser
WAIT_MS = 240_000


def test_a_click_on_a_projector_point_lists_its_neighbours_in_the_original_space(page, server, tmp_path) -> None:
    upload_projector_tsv(page, server, tmp_path)
    expect(page.get_by_text("Click a point (or type its number above)")).to_be_attached(timeout=WAIT_MS)
    point = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .point").nth(3)
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)  # plotly picks the point under the pointer on hover, then the click selects it
    expect(page.locator(".hoverlayer .hovertext").first).to_be_attached(timeout=20_000)
    page.mouse.click(x, y)
    wait_idle(page)
    expect(page.get_by_text(re.compile(r"^#\d+ · word: w\d+"))).to_be_attached(timeout=WAIT_MS)
    pick = int(parse_qs(urlparse(page.url).query)["pj_pick"][0])
    assert 1 <= pick <= 12
    expect(page.get_by_text(re.compile(rf"^#{pick} · word: w{pick - 1} "))).to_be_attached()
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(1)
    assert_clean(page)
