"""Shared fixtures. Tests read the real data dir (EMBPROBE_DATA or ../shared/data).

The repository root is on ``sys.path`` because the suite runs as ``python -m pytest`` from it
(``make test``); the root itself is ``corpora.paths.REPO_ROOT``.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from corpora.paths import data_dir

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The user's own model registry (embprobe.toml in the working directory) never leaks into the tests:
# a file that does not exist; tests that register models point EMBPROBE_MODELS at their tmp_path.
os.environ["EMBPROBE_MODELS"] = os.path.join(tempfile.mkdtemp(prefix="embprobe-tests-"), "embprobe.toml")


@pytest.fixture(scope="session")
def data_root() -> Path:
    return data_dir()
