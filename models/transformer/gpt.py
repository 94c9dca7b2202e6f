"""GPT-2 decoders (any local checkpoint) and the one trained here, ``assets/gpt-small``."""
from __future__ import annotations

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from models.assets import ASSETS, read_model_card
from models.base import ModelLoadError
from models.registry import train_command
from models.transformer.embedder import TransformerEmbedder
from models.transformer.pieces import best_window_left


class GptEmbedder(TransformerEmbedder):
    """Any local GPT-2 checkpoint (GPT2LMHeadModel or GPT2Model) with a fast tokenizer.

    Layers: 0 = token + position embeddings, then one per transformer block (the last one after the
    final LayerNorm, as ``transformers`` returns it). A BOS token (``<s>`` / ``<|endoftext|>``) is
    prepended to every input so the first word has something to attend to; attention is causal.
    """

    family = "gpt"

    def _load_model(self) -> torch.nn.Module:
        # The LM head is unused for embeddings but keeps any GPT-2 LM checkpoint loadable as is.
        return self._from_pretrained(AutoModelForCausalLM)

    def _num_specials(self) -> int:
        return 1 if self._bos() is not None else 0

    def _bos(self) -> int | None:
        tok = self.tokenizer
        return tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id

    def _wrap(self, pieces: list[int]) -> tuple[list[int], int]:
        bos = self._bos()
        return ([bos] + pieces, 1) if bos is not None else (list(pieces), 0)

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        # Most left context: the earliest window that contains the piece.
        return best_window_left(starts, n, self.window)

    def _pieces(self, sentences: list[list[str]]) -> list[tuple[list[int], np.ndarray]]:
        # Byte-level BPE (original GPT-2) needs add_prefix_space for pre-split words; word-level doesn't.
        if getattr(self.tokenizer, "add_prefix_space", None) is False and type(self.tokenizer).__name__.startswith("GPT2"):
            self.tokenizer.add_prefix_space = True
        return super()._pieces(sentences)


def load_gpt_asset(name: str = "gpt-small", pooling: str = "mean", device: str | None = None) -> GptEmbedder:
    """A GPT-2 checkpoint trained here, from ``assets/<name>/`` (see ``python -m models train gpt``)."""
    path = ASSETS / name
    if not path.exists():
        command = train_command(name) or f"python -m models train gpt --out assets/{name}"
        raise ModelLoadError(f"{path} does not exist: train it with `{command}` (see docs/models.md).")
    card = read_model_card(path) or {}
    return GptEmbedder(path, name=name, pooling=pooling, device=device, card=card,
                       description=f"GPT-2 architecture trained here ({card.get('params', '?')} parameters)")
