"""Shared fixtures. Tests read the real data dir (EMBPROBE_DATA or ../shared/data).

The repository root is on ``sys.path`` because the suite runs as ``python -m pytest`` from it
(``make test``); the root itself is ``corpora.paths.REPO_ROOT``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from corpora.paths import data_dir

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# One folder per test run, made by the process that starts it and inherited by its xdist workers; removed when the
# run ends. In it, the run's own cache: a fresh one, as a fresh clone's CI run has, unless EMBPROBE_CACHE is set (a
# pre-warmed cache is the caller's choice). A developer's warm cache had let a reader bug pass here and fail in CI
# (the reader and feature caches key on data, not on code: docs/reliability.md, round seventeen).
OWN_RUN_DIR = "EMBPROBE_TEST_RUN_DIR" not in os.environ
if OWN_RUN_DIR:
    os.environ["EMBPROBE_TEST_RUN_DIR"] = tempfile.mkdtemp(prefix="embprobe-tests-")
RUN_DIR = Path(os.environ["EMBPROBE_TEST_RUN_DIR"])
os.environ.setdefault("EMBPROBE_CACHE", str(RUN_DIR / "cache"))
# The user's own model registry (embprobe.toml in the working directory) never leaks into the tests: a file that does
# not exist, one per process (two workers never write one registry); tests that register models use their tmp_path.
os.environ["EMBPROBE_MODELS"] = os.path.join(tempfile.mkdtemp(prefix="registry-", dir=RUN_DIR), "embprobe.toml")


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread_per_worker():
    """Under xdist each worker is one process per core: torch's default of a thread per core in each of them
    oversubscribes the cores, which costs most on the small fits the tests make (a plateau-schedule fit of 3,000
    rows took 31 s with two threads beside another busy two-thread process, 1.4 s with one; 2026-12-07). A test
    that needs another count sets it itself (test_same_numbers: 2, the golden runs' reduction order)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch  # lazy: a run that never starts workers keeps torch's default

        torch.set_num_threads(1)
    yield


def pytest_sessionfinish(session) -> None:
    if OWN_RUN_DIR and not hasattr(session.config, "workerinput"):  # the run's first process, once its workers ended
        shutil.rmtree(RUN_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def data_root() -> Path:
    return data_dir()


# ------------------------------------------------------------------------------------ real browser
# One `streamlit run app.py` server and one Chromium per test session, shared by every browser test
# file (tests/browser_support.py has the command line and the page helpers).


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """A `streamlit run app.py` subprocess on a free localhost port; yields its base URL."""
    from app_pages.corpus_ui import LIMIT_ENV
    from tests.browser_support import corpus_limit_env, server_env, start_streamlit, stop

    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    try:
        proc, url = start_streamlit(log_path, env=server_env(**corpus_limit_env(LIMIT_ENV)), timeout_s=90)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield url
    finally:
        stop(proc)
        # The app logs tracebacks to the server log on purpose; printed when a test failed.
        print("\n--- streamlit server log (tail) ---\n" + (log_path.read_text()[-4000:] if log_path.exists() else ""))


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    from tests.browser_support import chromium_problem, launch_chromium

    if problem := chromium_problem():
        pytest.fail(problem)  # CI installs Chromium: a missing one is a failure, not a skip
    with sync_playwright() as p:
        b = launch_chromium(p)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser, server):
    """A fresh browser context (1440 × 1000) and page; alert() dialogs are recorded in page.dialogs."""
    from tests.browser_support import VIEWPORT

    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs  # an alert() from rendered user HTML would land here
    yield pg
    ctx.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where browser tests save screenshots: $EMBPROBE_SCREENSHOTS (`make screenshots`) or a temp dir."""
    from tests.browser_support import screenshots_dir

    return screenshots_dir(tmp_path_factory.mktemp("screenshots"))
