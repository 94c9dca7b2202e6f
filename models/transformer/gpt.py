"""Decoders (GPT-2, GPT-Neo, GPT-NeoX/Pythia, OPT, Llama, Mistral, Qwen2, Gemma …) from any local checkpoint,
and the GPT-2 trained here, ``assets/gpt-small``."""

from __future__ import annotations

import numpy as np

from models.assets import ASSETS, require_card
from models.base import ModelLoadError
from models.spec import GPT
from models.transformer.embedder import TransformerEmbedder
from models.transformer.pieces import best_window_left


class GptEmbedder(TransformerEmbedder):
    """Any local causal decoder checkpoint with a tokenizer; family "gpt".

    Layers: 0 = token (+ position) embeddings, then one per transformer block (the last one after
    the final norm, as ``transformers`` returns it). Every window starts with one token so the first
    word has something to attend to: the tokenizer's own BOS where it adds one (Llama), else the
    BOS / EOS token (``<s>``, ``<|endoftext|>``), as GPT-2 is run; no EOS at the end. Attention is causal.
    """

    family = GPT.name
    decoder = True

    def _bos(self) -> int | None:
        """The token prepended to every window (None: none)."""
        return self._head[0] if self._head else None

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        # Most left context: the earliest window that contains the piece.
        return best_window_left(starts, n, self.window)


def load_gpt_asset(name: str = "gpt-small", pooling: str = "mean", device: str | None = None) -> GptEmbedder:
    """A GPT-2 checkpoint trained here, from ``assets/<name>/`` (see ``python -m models train gpt``)."""
    path = ASSETS / name
    if not path.exists():  # models.registry.load_spec adds how to train it
        raise ModelLoadError(f"{path} does not exist (see docs/models.md).")
    card = require_card(path, name)
    return GptEmbedder(
        path,
        name=name,
        pooling=pooling,
        device=device,
        card=card,
        description=f"GPT-2 architecture trained here ({card.get('params', '?')} parameters)",
    )
