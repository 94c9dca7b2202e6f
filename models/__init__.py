"""Embedding models behind one interface (see ``models.base``)."""
from models.base import (  # noqa: F401
    Embedder,
    ModelInfo,
    ModelLoadError,
    PieceAttention,
    SentenceEmbedding,
    UnknownModelError,
    default_device,
)
