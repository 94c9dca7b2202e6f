"""Task-specific layer weighting of Peters et al. (2018), after AllenNLP's ``scalar_mix.py``.

    ELMo_k = γ · Σ_j s_j · h_{k,j},   s = softmax(w)

with optional layer normalisation of each h_j (over non-masked positions).
"""

from __future__ import annotations

import torch
from torch import nn


class ScalarMix(nn.Module):
    """Softmax-normalised weights s_j (one per layer) and a scale γ.

    Args:
        num_layers: number of layers mixed (L+1 for ELMo).
        do_layer_norm: normalise each layer before mixing.
        initial_weights: pre-softmax weights; zeros give the uniform mix.
        trainable: False freezes s and γ (e.g. the fixed "mean of all layers" mix).
    """

    def __init__(
        self,
        num_layers: int,
        do_layer_norm: bool = False,
        initial_weights: list[float] | None = None,
        initial_gamma: float = 1.0,
        trainable: bool = True,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError("ScalarMix needs at least one layer.")
        initial_weights = initial_weights or [0.0] * num_layers
        if len(initial_weights) != num_layers:
            raise ValueError(f"{len(initial_weights)} initial weights for {num_layers} layers.")
        self.num_layers = num_layers
        self.do_layer_norm = do_layer_norm
        self.scalar_parameters = nn.Parameter(torch.tensor(initial_weights, dtype=torch.float), requires_grad=trainable)
        self.gamma = nn.Parameter(torch.tensor([initial_gamma]), requires_grad=trainable)

    @property
    def weights(self) -> torch.Tensor:
        """s: (num_layers,), non-negative, sums to 1."""
        return torch.softmax(self.scalar_parameters, dim=0)

    def forward(self, layers: torch.Tensor | list[torch.Tensor], mask: torch.Tensor | None = None) -> torch.Tensor:
        """layers: (num_layers, ..., dim) tensor or a list of (..., dim) tensors; mask: (...) bool.

        Returns (..., dim).
        """
        if isinstance(layers, (list, tuple)):
            layers = torch.stack(list(layers))
        if layers.shape[0] != self.num_layers:
            raise ValueError(f"Expected {self.num_layers} layers, got {layers.shape[0]}.")
        if self.do_layer_norm:
            layers = torch.stack([_masked_layer_norm(h, mask) for h in layers])
        s = self.weights.to(layers.dtype).view(-1, *([1] * (layers.dim() - 1)))
        return self.gamma.to(layers.dtype) * (s * layers).sum(dim=0)

    def weight_penalty(self) -> torch.Tensor:
        """‖s − mean(s)‖²: pulls the mix towards the uniform average, on the softmax weights s.

        Not the paper's penalty, which is on the raw w (bilm-tf's ``weight_layers``: λ‖w‖²; arXiv v2: λ‖w‖²₂).
        Near the uniform mix this one's gradient in w is about 1/n² of that one's (n layers) and it is bounded by
        1 − 1/n, so our λ = 1 pulls about as hard as the paper's λ ≈ 0.1 for ELMo's 3 layers (≈ 0.02 for 7).
        On the committed full-data runs λ = 1 still held s near uniform (elmo-small 0.332–0.334, gpt-small
        0.197–0.202, MiniLM 0.126–0.159); on a 400-sentence slice it did not (elmo-small 0.36, 0.33, 0.31).
        The committed λ rows (``docs/results/mix.csv``) were computed with this penalty."""
        s = self.weights
        return ((s - s.mean()) ** 2).sum()


def _masked_layer_norm(h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Normalise h (..., dim) by the mean/std over all non-masked elements, as AllenNLP does."""
    if mask is None:
        mask = torch.ones(h.shape[:-1], dtype=torch.bool, device=h.device)
    m = mask.unsqueeze(-1).to(h.dtype)
    n = m.sum() * h.shape[-1]
    mean = (h * m).sum() / n
    var = (((h - mean) * m) ** 2).sum() / n
    return (h - mean) / torch.sqrt(var + 1e-12)
