"""The models layer's two errors, in a module of their own so that naming them imports no torch.

Both are ``corpora.errors.LabError``: the command line and the app print them as one message.
``models.base`` re-exports them (``from models.base import ModelLoadError`` keeps working).
"""

from __future__ import annotations

from corpora.errors import LabError


class ModelLoadError(LabError, RuntimeError):
    """A checkpoint is missing, truncated or malformed; the message says which file and why."""


class UnknownModelError(LabError, KeyError):
    """No model of that name is registered."""
