"""Encoders (BERT, RoBERTa, DeBERTa, ELECTRA, ALBERT, DistilBERT, XLM-R, ModernBERT; the encoder of T5 and BART)
from any local checkpoint, and the default one, all-MiniLM-L6-v2 (from the folder of its pip package)."""

from __future__ import annotations

import inspect
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from models.spec import BERT
from models.transformer.embedder import TransformerEmbedder
from models.transformer.pieces import best_window_centered


class BertEmbedder(TransformerEmbedder):
    """Any local encoder checkpoint (config.json + weights + tokenizer); family "bert".

    Layers: 0 = embedding output (token + position (+ segment) embeddings, normalised), then one per
    transformer layer. Each window is wrapped in the special tokens the tokenizer itself adds
    ([CLS] … [SEP], <s> … </s>, … </s>). ``pooling`` = "mean" (default), "first" or "last" piece per word.
    """

    family = BERT.name

    @cached_property
    def _takes_token_types(self) -> bool:
        return "token_type_ids" in inspect.signature(self.model.forward).parameters

    def _forward_kwargs(self, ids: torch.Tensor, mask: torch.Tensor) -> dict:
        kwargs = {"input_ids": ids, "attention_mask": mask}
        if self._takes_token_types:  # segment A for every piece: layer 0 = token + position + segment-0
            kwargs["token_type_ids"] = torch.zeros_like(ids)
        return kwargs

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        # Context on the poorer side: min(pieces to the left, pieces to the right) within the window.
        return best_window_centered(starts, n, self.window)


def load_minilm(directory: str | Path, name: str, pooling: str = "mean", device: str | None = None) -> BertEmbedder:
    """all-MiniLM-L6-v2 from the folder of its pip package (``models.registry``'s spec names the package;
    ``load_spec`` passes its folder)."""
    return BertEmbedder(directory, name=name, pooling=pooling, device=device, description="all-MiniLM-L6-v2")
