"""The biLM's language-model head (training and perplexity only): one adaptive softmax, both directions."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from models.elmo.bilm import ElmoBiLm

SPECIAL_WORDS = ["</S>", "<S>", "<UNK>"]


class BiLMLanguageModel(nn.Module):
    """biLM + one adaptive softmax shared by both directions (bilm-tf shares its softmax too).

    The forward top state at position t predicts token t+1, the backward one predicts token t−1;
    the loss is the mean forward NLL + the mean backward NLL.
    """

    def __init__(
        self,
        options: dict[str, Any],
        vocab_size: int,
        cutoffs: list[int] | None = None,
        dropout: float = 0.1,
        div_value: float = 4.0,
    ) -> None:
        super().__init__()
        self.bilm = ElmoBiLm(options, dropout=dropout)
        self.vocab_size = vocab_size
        self.cutoffs = [c for c in (cutoffs or default_cutoffs(vocab_size)) if 0 < c < vocab_size]
        if not self.cutoffs:  # AdaptiveLogSoftmaxWithLoss needs at least one tail cluster
            self.cutoffs = [max(1, vocab_size // 2)]
        self.div_value = div_value
        self.dropout = nn.Dropout(dropout)
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(
            self.bilm.projection_dim, vocab_size, self.cutoffs, div_value=div_value
        )

    def forward(self, char_ids: torch.Tensor, word_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """char_ids: (B, T, 50); word_ids: (B, T+2) vocabulary ids *with* <S>/</S>; at padding any id (``elmo_data``
        writes 0): the char ids' mask leaves it out.

        Returns {"loss": fwd + bwd mean NLL, "forward_nll", "backward_nll": summed NLL (nats),
        "num_targets": targets per direction}.
        """
        activations, mask = self.bilm(char_ids)
        top = activations[-1]  # (B, T+2, 2D)
        d = self.bilm.projection_dim
        fwd_states, bwd_states = self.dropout(top[..., :d]), self.dropout(top[..., d:])
        # forward: state t predicts word t+1; backward: state t+1 predicts word t. Both pairs exist where position t+1
        # is in the sentence (mask[t+1]): <S> … </S> gives as many targets each way. (mask[t] for the backward pair
        # took one more per sentence shorter than the batch: </S> "predicted" from the zero state of the padding.)
        sel = mask[:, 1:]
        fwd_out = self.softmax(fwd_states[:, :-1][sel], word_ids[:, 1:][sel])
        bwd_out = self.softmax(bwd_states[:, 1:][sel], word_ids[:, :-1][sel])
        n = sel.sum()
        fwd_nll = -fwd_out.output.sum()
        bwd_nll = -bwd_out.output.sum()
        return {
            "loss": (fwd_nll + bwd_nll) / n,
            "forward_nll": fwd_nll.detach(),
            "backward_nll": bwd_nll.detach(),
            "num_targets": n.detach(),
        }


def default_cutoffs(vocab_size: int) -> list[int]:
    """Adaptive-softmax clusters: a 2k head, then tails 5× bigger each (2k–10k, 10k–50k, …)."""
    cutoffs, c = [], 2000
    while c < vocab_size:
        cutoffs.append(c)
        c *= 5
    return cutoffs


def perplexity(nll_sum: float, count: float) -> float:
    return math.exp(nll_sum / max(count, 1.0))
