"""The code is lint-clean and formatted: ``ruff check`` and ``ruff format --check`` (config in pyproject.toml).

Fix locally with ``.venv/bin/ruff check --fix . && .venv/bin/ruff format .``; ``ruff`` is pinned in
requirements-dev.txt (`make test` installs it), so only an environment installed without it skips these tests.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from corpora.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed")


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_project_config_is_the_one_in_use():
    shown = ruff("check", "--show-settings", "corpora/paths.py")
    assert shown.returncode == 0, shown.stderr
    assert str(REPO_ROOT / "pyproject.toml") in shown.stdout
    assert "line_length = 120" in shown.stdout


def test_ruff_check_is_clean():
    done = ruff("check", "--output-format", "concise", ".")
    assert done.returncode == 0, f"ruff check found problems:\n{done.stdout}{done.stderr}"


def test_ruff_format_leaves_every_file_as_it_is():
    done = ruff("format", "--check", ".")
    assert done.returncode == 0, f"files ruff format would change:\n{done.stdout}{done.stderr}"
