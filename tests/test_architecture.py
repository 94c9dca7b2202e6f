"""The layers of docs/architecture.md hold: nothing imports upward, and modules stay small.

    corpora  <-  models  <-  probes  <-  viz  <-  app_pages / app.py
    (data)      (embedders) (probes)   (pure app logic)  (Streamlit)
                                    <-  cluster  (sweeps and sharded extraction, optional Ray)
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from corpora.paths import REPO_ROOT

#: package -> top-level packages it must never import (at module level or inside a function).
#: cluster/ (sweeps, sharded extraction, Ray) sits above probes, beside viz: nothing below or in the app imports it.
FORBIDDEN = {
    "corpora": {"models", "features", "probes", "viz", "cluster", "app_pages", "streamlit"},
    "models": {"features", "probes", "viz", "cluster", "app_pages", "streamlit"},
    "features": {"probes", "viz", "cluster", "app_pages", "streamlit"},
    "probes": {"viz", "cluster", "app_pages", "streamlit"},
    "viz": {"cluster", "app_pages", "streamlit"},
    "cluster": {"viz", "app_pages", "streamlit"},
}
MAX_LINES = 330   # "about 300": one concern per module


def modules(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def imported_packages(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_runs_up_the_layers(package):
    bad = {str(p.relative_to(REPO_ROOT)): sorted(imported_packages(p) & FORBIDDEN[package]) for p in modules(package)}
    assert {k: v for k, v in bad.items() if v} == {}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_modules_stay_small(package):
    long = {str(p.relative_to(REPO_ROOT)): n for p in modules(package)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
