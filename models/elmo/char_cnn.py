"""ELMo's context-independent token encoder: character CNN + highway layers + projection.

char ids (B, T, 50) → char embedding → Conv1d per filter width → max over time → activation
→ concat (n_filters) → Highway × n_highway → Linear → token vectors (B, T, D)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class Highway(nn.Module):
    """Highway layers (Srivastava et al., 2015) with AllenNLP's parametrisation.

    y = g ⊙ x + (1 − g) ⊙ f(A x + a),  g = σ(B x + b);  one Linear(dim, 2·dim) per layer holds
    [A; B]. The gate bias starts at 1 so the layer initially mostly carries its input.
    """

    def __init__(self, dim: int, num_layers: int = 1, activation: str = "relu") -> None:
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList([nn.Linear(dim, dim * 2) for _ in range(num_layers)])
        self.activation = activation_function(activation)
        for layer in self.layers:
            layer.bias.data[dim:].fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., dim) → (..., dim)."""
        for layer in self.layers:
            nonlinear_part, gate = layer(x).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * self.activation(nonlinear_part)
        return x


def activation_function(name: str):
    if name == "relu":
        return torch.relu
    if name == "tanh":
        return torch.tanh
    raise ValueError(f"Unknown char_cnn activation '{name}' (expected 'relu' or 'tanh').")


class CharCNNEncoder(nn.Module):
    """Context-independent token representation from characters.

    char ids (B, T, 50) → embedding (B·T, 50, char_dim) → Conv1d of each width → max over time →
    activation → concat (n_filters) → Highway × n_highway → Linear → (B, T, D).
    """

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__()
        cnn = options["char_cnn"]
        self.output_dim = options["lstm"]["projection_dim"]
        self.max_chars = cnn["max_characters_per_token"]
        self.char_dim = cnn["embedding"]["dim"]
        self.filters: list[list[int]] = [list(f) for f in cnn["filters"]]
        self.n_filters = sum(num for _, num in self.filters)
        # 256 bytes + 5 specials + row 0 for the mask = 262 rows whatever n_characters says (261/262).
        self.char_embedding = nn.Embedding(262, self.char_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(
            [nn.Conv1d(self.char_dim, num, kernel_size=width, bias=True) for width, num in self.filters]
        )
        self.activation_name = cnn["activation"]
        self.activation = activation_function(cnn["activation"])
        self.highways = Highway(self.n_filters, cnn["n_highway"], activation="relu")
        self.projection = nn.Linear(self.n_filters, self.output_dim, bias=True)
        for width, _num in self.filters:
            if width > self.max_chars:
                raise ValueError(f"Filter width {width} exceeds max_characters_per_token {self.max_chars}.")

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """char_ids: (B, T, 50) → (B, T, D)."""
        b, t, c = char_ids.shape
        x = self.char_embedding(char_ids.reshape(b * t, c)).transpose(1, 2)  # (B·T, char_dim, 50)
        pooled = []
        for conv in self.convolutions:
            convolved = conv(x)  # (B·T, num, 50 − width + 1)
            convolved = convolved.max(dim=-1).values  # (B·T, num)
            pooled.append(self.activation(convolved))
        token = torch.cat(pooled, dim=-1)  # (B·T, n_filters)
        token = self.highways(token)
        token = self.projection(token)  # (B·T, D)
        return token.view(b, t, self.output_dim)
