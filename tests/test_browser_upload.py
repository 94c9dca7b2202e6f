"""The Probes page's "Your data" tab in a real browser: upload real UD EWT slices, see the preview, run the
tag probe with its progress bar, see the layer chart; a file over the size limit is refused naming it.

Uses the session's server, browser and page fixtures (tests/conftest.py) and the helpers of
tests/browser_support.py, like tests/test_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import assert_clean, open_page, shot, wait_idle
from tests.test_app_upload import ewt_bytes

pytestmark = pytest.mark.browser
WAIT_MS = 180_000


def ewt_slice(data_root: Path, split: str, n: int, out: Path) -> Path:
    out.write_bytes(ewt_bytes(data_root, split, n))
    return out


def pick_tag(pg) -> None:
    """The tag probe's task (the tasks are the registered probes that read files, in registry order)."""
    pg.get_by_role("tab", name="Your data").click()
    pg.get_by_text("Tag (CoNLL-U or column file)").click()
    wait_idle(pg)


def uploader(pg, label: str):
    return pg.locator('[data-testid="stFileUploader"]').filter(has_text=label).locator('input[type="file"]')


def test_upload_preview_and_run(page, server, screenshots, data_root, tmp_path):
    open_page(page, server, "probes")
    pick_tag(page)
    expect(page.get_by_text("Upload a training file and a test file")).to_be_visible(timeout=WAIT_MS)
    uploader(page, "Train file").set_input_files(str(ewt_slice(data_root, "train", 60, tmp_path / "ewt-train.conllu")))
    wait_idle(page)
    uploader(page, "Test file").set_input_files(str(ewt_slice(data_root, "test", 30, tmp_path / "ewt-test.conllu")))
    wait_idle(page)
    expect(page.get_by_text("label column UPOS")).to_be_visible(timeout=WAIT_MS)
    assert_clean(page)
    page.get_by_role("button", name="Run on my data").click()
    expect(page.get_by_text(re.compile(r"done; saved to \S*cache/results"))).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_clean(page)
    expect(page.locator('[data-testid="stPlotlyChart"]').last).to_be_visible()
    shot(page, screenshots, "probes_upload")


def test_an_upload_over_the_limit_is_refused(page, server, tmp_path):
    from app_pages.probe_upload import MAX_MB

    big = tmp_path / "big.conllu"
    line = b"1\tx\tx\tX\tX\t_\t0\troot\t_\t_\n\n"
    big.write_bytes(line * int(1.5 * MAX_MB * 2**20 / len(line)))
    open_page(page, server, "probes")
    pick_tag(page)
    expect(page.get_by_text(f"Files up to {MAX_MB:g} MB each")).to_be_visible(timeout=WAIT_MS)
    uploader(page, "Train file").set_input_files(str(big))
    wait_idle(page)
    # Streamlit's uploader refuses it in the browser, naming the limit; nothing reaches the server.
    expect(page.get_by_text(re.compile(rf"File must be {MAX_MB:g}(\.0)? ?MB or smaller"))).to_be_visible(
        timeout=WAIT_MS
    )
    assert page.locator('[data-testid="stException"]').count() == 0
    expect(page.get_by_text("Upload a training file and a test file")).to_be_visible()
