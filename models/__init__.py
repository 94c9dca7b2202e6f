"""Embedding models behind one interface (``models.base.Embedder``), named by ``models.registry``.

Importing the package is light (no torch): it names the defaults and the two errors only.
"""

from models.errors import ModelLoadError, UnknownModelError
from models.spec import DEFAULT_MODEL, DEFAULT_STATIC_MODEL

__all__ = ["DEFAULT_MODEL", "DEFAULT_STATIC_MODEL", "ModelLoadError", "UnknownModelError"]
