"""The models layer's errors, in a module of their own so that naming them imports no torch.

Both are ``corpora.errors.LabError``: the command line and the app print them as one message.
``models.base`` re-exports them (``from models.base import ModelLoadError`` keeps working).
"""

from __future__ import annotations

from corpora.errors import LabError


class ModelLoadError(LabError, RuntimeError):
    """A checkpoint is missing, truncated or malformed; the message says which file and why."""


class UnknownModelError(LabError, KeyError):
    """No model of that name is registered."""


class UnknownTextError(ModelLoadError):
    """The model loaded, but the text is mostly words it cannot read (a vectors file's words written another way,
    another alphabet): their vectors would all be zeros or the unknown token's. A ``ModelLoadError`` for the
    callers that catch those; the app says it as the text's problem, not a load failure."""
