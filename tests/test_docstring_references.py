"""The design notes' cross-references resolve: every Sphinx role in a module's docstrings and comments
(``:func:``, ``:class:``, ``:meth:``, ``:data:``, ``:attr:``, ``:mod:``, ``:exc:``) names something that exists.

An outside read of the notes (docs/reliability.md, round seventeen) found ``:meth:`QueryKey.check``` left behind
after the method became ``max_error``; this walks every product package but the app's pages (which run on import).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("models", "probes", "features", "viz", "cluster", "corpora")
ROLE = re.compile(r":(?:func|class|data|meth|mod|attr|exc):`~?([\w.]+)`")


def _resolve(module, ref: str) -> bool:
    """Whether ``ref`` names an attribute of ``module`` or, when it starts with a package, a module's attribute."""
    parts, obj = ref.split("."), module
    if parts[0] in PACKAGES:
        for k in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                continue
            parts = parts[k:]
            break
        else:
            return False
    for name in parts:
        if not hasattr(obj, name):
            # a method named from inside its class's docstring (``:meth:`scores```), as Sphinx resolves it
            return len(parts) == 1 and any(
                isinstance(c, type) and hasattr(c, name) for c in vars(module).values() if c is not module
            )
        obj = getattr(obj, name)
    return True


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if ROLE.search(p.read_text()))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cross_reference_in_a_modules_notes_names_something_that_exists(path: Path) -> None:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    module = importlib.import_module(name)
    missing = sorted(r for r in set(ROLE.findall(path.read_text())) if not _resolve(module, r))
    assert not missing, f"{path.relative_to(ROOT)} refers to {missing}, which do not exist"
