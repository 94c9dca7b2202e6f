"""ELMo's bidirectional LSTM stack: LSTMP cells (LSTM with a projection), forward and backward.

    token vectors (B, T, D) ──ElmoLstm──▶ (n_layers, B, T, 2D) = [h_fwd; h_bwd] per layer

The two directions never mix inside the stack; every sequence starts from zero states and its
padding sits after it, so a sentence's vectors do not depend on what it is batched with.
"""
from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn


def _reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of x (B, T, …) within its own length; padding stays in place."""
    b, t = x.shape[:2]
    pos = torch.arange(t, device=x.device).unsqueeze(0).expand(b, t)
    rev = lengths.unsqueeze(1) - 1 - pos
    idx = torch.where(rev >= 0, rev, pos)  # (B, T)
    idx = idx.view(b, t, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, idx)


class LstmCellWithProjection(nn.Module):
    """One direction of one LSTMP layer (Sak et al., 2014), as AllenNLP's ``LstmCellWithProjection``.

        gates = W_i x_t + W_s h_{t−1} + b       (torch gate order i, f, g, o)
        c_t = clip(σ(i) ⊙ tanh(g) + σ(f) ⊙ c_{t−1}, ±cell_clip)
        h_t = clip(W_p (σ(o) ⊙ tanh(c_t)), ±proj_clip)

    ``go_forward=False`` runs right-to-left within each sequence's own length.
    Without clipping and recurrent dropout the fused ``torch.lstm`` kernel (proj_size) computes the
    identical recurrence much faster; with them, an explicit time loop.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        cell_size: int,
        go_forward: bool = True,
        recurrent_dropout_probability: float = 0.0,
        memory_cell_clip_value: float | None = None,
        state_projection_clip_value: float | None = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.cell_size = cell_size
        self.go_forward = go_forward
        self.recurrent_dropout_probability = recurrent_dropout_probability
        self.memory_cell_clip_value = memory_cell_clip_value or None
        self.state_projection_clip_value = state_projection_clip_value or None
        self.input_linearity = nn.Linear(input_size, 4 * cell_size, bias=False)
        self.state_linearity = nn.Linear(hidden_size, 4 * cell_size, bias=True)
        self.state_projection = nn.Linear(cell_size, hidden_size, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Orthogonal blocks per gate (AllenNLP's block_orthogonal); forget-gate bias 1.
        for weight in (self.input_linearity.weight, self.state_linearity.weight):
            for k in range(4):
                nn.init.orthogonal_(weight.data[k * self.cell_size : (k + 1) * self.cell_size])
        nn.init.orthogonal_(self.state_projection.weight.data)
        self.state_linearity.bias.data.zero_()
        self.state_linearity.bias.data[self.cell_size : 2 * self.cell_size].fill_(1.0)

    @property
    def uses_fused_kernel(self) -> bool:
        return (
            self.memory_cell_clip_value is None
            and self.state_projection_clip_value is None
            and not (self.training and self.recurrent_dropout_probability > 0)
        )

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """inputs: (B, T, input_size), lengths: (B,) → outputs (B, T, hidden_size), zero at padding."""
        b, t, _ = inputs.shape
        x = inputs if self.go_forward else _reverse_padded(inputs, lengths)
        # Padding sits after each sequence, so a left-to-right pass never lets it leak into real steps.
        if self.uses_fused_kernel:
            out = self._fused(x)
        else:
            out = self._loop(x)
        if not self.go_forward:
            out = _reverse_padded(out, lengths)
        mask = torch.arange(t, device=inputs.device).unsqueeze(0) < lengths.unsqueeze(1)
        return out * mask.unsqueeze(-1).to(out.dtype)

    def _fused(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        h0 = x.new_zeros(1, b, self.hidden_size)
        c0 = x.new_zeros(1, b, self.cell_size)
        zero_bias = torch.zeros_like(self.state_linearity.bias)
        params = [
            self.input_linearity.weight, self.state_linearity.weight,
            zero_bias, self.state_linearity.bias, self.state_projection.weight,
        ]
        params = [p.to(x.dtype) for p in params]
        with warnings.catch_warnings():
            # torch notes once that oneDNN has no projection kernel and it uses its own: expected.
            warnings.filterwarnings("ignore", message="LSTM with projections is not supported")
            out, _, _ = torch.lstm(x, (h0, c0), params, True, 1, 0.0, self.training, False, True)
        return out

    def _loop(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        c = self.cell_size
        memory = x.new_zeros(b, c)
        state = x.new_zeros(b, self.hidden_size)
        dropout_mask = None
        if self.training and self.recurrent_dropout_probability > 0:
            keep = 1.0 - self.recurrent_dropout_probability
            dropout_mask = torch.bernoulli(x.new_full((b, self.hidden_size), keep)) / keep
        projected_inputs = self.input_linearity(x)  # (B, T, 4C), one matmul for all steps
        outputs = []
        for step in range(t):
            gates = projected_inputs[:, step] + self.state_linearity(state)
            input_gate = torch.sigmoid(gates[:, 0 * c : 1 * c])
            forget_gate = torch.sigmoid(gates[:, 1 * c : 2 * c])
            memory_init = torch.tanh(gates[:, 2 * c : 3 * c])
            output_gate = torch.sigmoid(gates[:, 3 * c : 4 * c])
            memory = input_gate * memory_init + forget_gate * memory
            if self.memory_cell_clip_value is not None:
                memory = torch.clamp(memory, -self.memory_cell_clip_value, self.memory_cell_clip_value)
            state = self.state_projection(output_gate * torch.tanh(memory))
            if self.state_projection_clip_value is not None:
                state = torch.clamp(state, -self.state_projection_clip_value, self.state_projection_clip_value)
            if dropout_mask is not None:
                state = state * dropout_mask
            outputs.append(state)
        return torch.stack(outputs, dim=1)


class ElmoLstm(nn.Module):
    """Forward and backward stacks of ``n_layers`` LSTMP layers, as AllenNLP's ``ElmoLstm``.

    The directions never mix inside the stack (the forward LM must not see the future). For layers
    after the first, the layer input is added to its output (residual / skip connection).
    """

    def __init__(self, options: dict[str, Any], dropout: float = 0.0) -> None:
        super().__init__()
        lstm = options["lstm"]
        self.num_layers = lstm["n_layers"]
        self.hidden_size = lstm["projection_dim"]
        self.cell_size = lstm["dim"]
        self.use_skip_connections = bool(lstm.get("use_skip_connections", True))
        kwargs = dict(
            memory_cell_clip_value=lstm.get("cell_clip"),
            state_projection_clip_value=lstm.get("proj_clip"),
        )
        d, c = self.hidden_size, self.cell_size
        self.forward_layers = nn.ModuleList(
            [LstmCellWithProjection(d, d, c, go_forward=True, **kwargs) for _ in range(self.num_layers)]
        )
        self.backward_layers = nn.ModuleList(
            [LstmCellWithProjection(d, d, c, go_forward=False, **kwargs) for _ in range(self.num_layers)]
        )
        self.dropout = nn.Dropout(dropout)  # on each layer's input, as bilm-tf's DropoutWrapper

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """inputs: (B, T, D), mask: (B, T) bool → (n_layers, B, T, 2D) = [fwd; bwd] per layer."""
        lengths = mask.long().sum(dim=1)
        fwd, bwd = inputs, inputs
        outputs = []
        for index, (f_layer, b_layer) in enumerate(zip(self.forward_layers, self.backward_layers)):
            f_cache, b_cache = fwd, bwd
            fwd = f_layer(self.dropout(fwd), lengths)
            bwd = b_layer(self.dropout(bwd), lengths)
            if index != 0 and self.use_skip_connections:
                fwd = fwd + f_cache
                bwd = bwd + b_cache
            outputs.append(torch.cat([fwd, bwd], dim=-1))
        return torch.stack(outputs)
