"""ELMo's bidirectional LSTM stack: LSTMP cells (LSTM with a projection), forward and backward.

    token vectors (B, T, D) ──ElmoLstm──▶ (n_layers, B, T, 2D) = [h_fwd; h_bwd] per layer

The two directions never mix inside the stack. By default every sequence starts from zero states
and its padding sits after it, so a sentence's vectors do not depend on what it is batched with.

``stateful=True`` is how bilm-tf (``BidirectionalLanguageModel``) and AllenNLP (``_ElmoBiLm``) ran
the original: the final (h, c) of batch row b, for both directions and every layer, is the initial
state of row b in the next batch. "Final" is each row's own last real step (bilm-tf's
``dynamic_rnn(sequence_length=…)``): for the forward direction after ``</S>``, for the backward
direction (which reads the row reversed within its length) after ``<S>``; padding never touches
a state. Rows beyond a smaller next batch keep their states (bilm-tf's ``max_batch_size`` buffer).

On CUDA the fused kernel is cuDNN's, which wants a cell's five weights (W_i, W_s, a zero input
bias, b, W_p) as views of ONE buffer in its own layout; otherwise it copies them into one on every
call and warns ("not part of single contiguous chunk of memory"). ``flatten_parameters`` puts them
there once, as ``nn.LSTM`` does, and runs after every ``.to()`` / ``.half()`` (``_apply``); loading
weights (``load_state_dict``, the hdf5 reader, a redraw) copies in place and keeps the views.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn
from torch.backends.cudnn import rnn as cudnn_rnn

# (h, c) of one LSTMP direction: h (B, hidden_size), c (B, cell_size).
LstmState = tuple[torch.Tensor, torch.Tensor]


def _reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of x (B, T, …) within its own length; padding stays in place."""
    b, t = x.shape[:2]
    pos = torch.arange(t, device=x.device).unsqueeze(0).expand(b, t)
    rev = lengths.unsqueeze(1) - 1 - pos
    idx = torch.where(rev >= 0, rev, pos)  # (B, T)
    idx = idx.view(b, t, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, idx)


def _cudnn_flattenable(weights: list[torch.Tensor]) -> bool:
    """Whether cuDNN will run these weights (nn.LSTM's test before it flattens)."""
    return (
        all(w.is_cuda and w.dtype == weights[0].dtype and torch.backends.cudnn.is_acceptable(w) for w in weights)
        and torch._use_cudnn_rnn_flatten_weight()
    )


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
        # torch.lstm takes two biases; the input one is zero. Not a weight: not in the state dict.
        self.register_buffer("fused_input_bias", torch.zeros(4 * cell_size), persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Orthogonal blocks per gate (AllenNLP's block_orthogonal); forget-gate bias 1.
        for weight in (self.input_linearity.weight, self.state_linearity.weight):
            for k in range(4):
                nn.init.orthogonal_(weight.data[k * self.cell_size : (k + 1) * self.cell_size])
        nn.init.orthogonal_(self.state_projection.weight.data)
        self.state_linearity.bias.data.zero_()
        self.state_linearity.bias.data[self.cell_size : 2 * self.cell_size].fill_(1.0)

    def fused_weights(self) -> list[torch.Tensor]:
        """What torch.lstm takes, in its order: W_i (4C, in), W_s (4C, D), b_i = 0, b_s (4C), W_p (D, C)."""
        return [
            self.input_linearity.weight,
            self.state_linearity.weight,
            self.fused_input_bias,
            self.state_linearity.bias,
            self.state_projection.weight,
        ]

    def flatten_parameters(self) -> None:
        """Make the fused weights views of one buffer in cuDNN's layout (nn.LSTM's own call); no-op off cuDNN."""
        weights = self.fused_weights()
        if not _cudnn_flattenable(weights):
            return
        with torch.cuda.device_of(weights[0]), torch.no_grad():
            torch._cudnn_rnn_flatten_weight(
                weights,
                len(weights),
                self.input_size,
                cudnn_rnn.get_cudnn_mode("LSTM"),
                self.cell_size,
                self.hidden_size,  # proj_size
                1,  # num_layers
                True,  # batch_first
                False,  # bidirectional
            )

    def _apply(self, fn: Any, recurse: bool = True) -> LstmCellWithProjection:
        # .to() / .half() / .cuda() give the weights new storage: flatten them again, as nn.LSTM does.
        module = super()._apply(fn, recurse)
        self.flatten_parameters()
        return module

    @property
    def uses_fused_kernel(self) -> bool:
        return (
            self.memory_cell_clip_value is None
            and self.state_projection_clip_value is None
            and not (self.training and self.recurrent_dropout_probability > 0)
        )

    def forward(
        self,
        inputs: torch.Tensor,
        lengths: torch.Tensor,
        initial_state: LstmState | None = None,
        return_state: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, LstmState]:
        """inputs: (B, T, input_size), lengths: (B,) → outputs (B, T, hidden_size), zero at padding.

        initial_state: (h (B, hidden_size), c (B, cell_size)), zeros when None. With
        ``return_state`` also returns each row's final (h, c) at its own last real step (a row of
        length 0 keeps its initial state); that needs the time loop, not the fused kernel.
        """
        b, t, _ = inputs.shape
        x = inputs if self.go_forward else _reverse_padded(inputs, lengths)
        # Padding sits after each sequence, so a left-to-right pass never lets it leak into real steps.
        if self.uses_fused_kernel and initial_state is None and not return_state:
            out, final = self._fused(x), None
        else:
            # Per-row final states cost two masked selects a step: only when they are wanted.
            out, final = self._run(x, lengths if return_state else None, initial_state)
        if not self.go_forward:
            out = _reverse_padded(out, lengths)
        mask = torch.arange(t, device=inputs.device).unsqueeze(0) < lengths.unsqueeze(1)
        out = out * mask.unsqueeze(-1).to(out.dtype)
        return (out, final) if return_state else out

    def _fused(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        h0 = x.new_zeros(1, b, self.hidden_size)
        c0 = x.new_zeros(1, b, self.cell_size)
        params = [p.to(x.dtype) for p in self.fused_weights()]  # the weights themselves when dtypes agree
        with warnings.catch_warnings():
            # torch notes once that oneDNN has no projection kernel and it uses its own: expected.
            warnings.filterwarnings("ignore", message="LSTM with projections is not supported")
            out, _, _ = torch.lstm(x, (h0, c0), params, True, 1, 0.0, self.training, False, True)
        return out

    def _loop(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, input_size), every row full length, zero initial state → (B, T, hidden_size)."""
        return self._run(x)[0]

    def _run(
        self, x: torch.Tensor, lengths: torch.Tensor | None = None, initial_state: LstmState | None = None
    ) -> tuple[torch.Tensor, LstmState]:
        """The explicit time loop. x: (B, T, input_size), padding after each row's ``lengths``.

        Returns outputs (B, T, hidden_size) and the final (h (B, D), c (B, C)); a row's state stops
        changing after its last real step (lengths None = all rows full length).
        """
        b, t, _ = x.shape
        c = self.cell_size
        if initial_state is None:
            state, memory = x.new_zeros(b, self.hidden_size), x.new_zeros(b, c)
        else:
            state, memory = initial_state
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
            new_memory = input_gate * memory_init + forget_gate * memory
            if self.memory_cell_clip_value is not None:
                new_memory = torch.clamp(new_memory, -self.memory_cell_clip_value, self.memory_cell_clip_value)
            new_state = self.state_projection(output_gate * torch.tanh(new_memory))
            if self.state_projection_clip_value is not None:
                new_state = torch.clamp(new_state, -self.state_projection_clip_value, self.state_projection_clip_value)
            if dropout_mask is not None:
                new_state = new_state * dropout_mask
            if lengths is None:
                memory, state = new_memory, new_state
            else:  # rows past their length keep their last real state (dynamic_rnn's sequence_length)
                active = (lengths > step).unsqueeze(1)
                memory, state = torch.where(active, new_memory, memory), torch.where(active, new_state, state)
            outputs.append(new_state)
        return torch.stack(outputs, dim=1), (state, memory)


class ElmoLstm(nn.Module):
    """Forward and backward stacks of ``n_layers`` LSTMP layers, as AllenNLP's ``ElmoLstm``.

    The directions never mix inside the stack (the forward LM must not see the future). For layers
    after the first, the layer input is added to its output (residual / skip connection).
    ``stateful``: carry each row's final states into the next batch (module doc); ``reset_states()``.
    """

    def __init__(self, options: dict[str, Any], dropout: float = 0.0, stateful: bool = False) -> None:
        super().__init__()
        lstm = options["lstm"]
        self.num_layers = lstm["n_layers"]
        self.hidden_size = lstm["projection_dim"]
        self.cell_size = lstm["dim"]
        self.use_skip_connections = bool(lstm.get("use_skip_connections", True))
        kwargs = dict(memory_cell_clip_value=lstm.get("cell_clip"), state_projection_clip_value=lstm.get("proj_clip"))
        d, c = self.hidden_size, self.cell_size
        self.forward_layers = nn.ModuleList(
            [LstmCellWithProjection(d, d, c, go_forward=True, **kwargs) for _ in range(self.num_layers)]
        )
        self.backward_layers = nn.ModuleList(
            [LstmCellWithProjection(d, d, c, go_forward=False, **kwargs) for _ in range(self.num_layers)]
        )
        self.dropout = nn.Dropout(dropout)  # on each layer's input, as bilm-tf's DropoutWrapper
        self.stateful = stateful
        # The carried states: h (n_layers, 2, rows, D), c (n_layers, 2, rows, C), direction 0 = forward.
        # Buffers so that .to(device, dtype) moves them; not persistent: they are not weights.
        self.register_buffer("carried_h", None, persistent=False)
        self.register_buffer("carried_c", None, persistent=False)

    def reset_states(self) -> None:
        """Forget the carried states: the next batch starts from zero states, as a fresh model."""
        self.carried_h = None
        self.carried_c = None

    def initial_states(self, batch_size: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h (n_layers, 2, B, D), c (n_layers, 2, B, C): the carried rows 0..B−1, zeros for rows never run."""
        h = like.new_zeros(self.num_layers, 2, batch_size, self.hidden_size)
        c = like.new_zeros(self.num_layers, 2, batch_size, self.cell_size)
        if self.carried_h is not None and self.carried_c is not None:
            n = min(batch_size, self.carried_h.shape[2])
            h[:, :, :n] = self.carried_h[:, :, :n]
            c[:, :, :n] = self.carried_c[:, :, :n]
        return h, c

    def _carry(self, h: torch.Tensor, c: torch.Tensor) -> None:
        """Keep a batch's final h (n_layers, 2, B, D), c (…, C) in rows 0..B−1; later rows keep theirs."""
        h, c = h.detach(), c.detach()
        b = h.shape[2]
        if self.carried_h is not None and self.carried_c is not None and self.carried_h.shape[2] > b:
            h = torch.cat([h, self.carried_h[:, :, b:].to(h.dtype)], dim=2)
            c = torch.cat([c, self.carried_c[:, :, b:].to(c.dtype)], dim=2)
        self.carried_h, self.carried_c = h, c

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """inputs: (B, T, D), mask: (B, T) bool → (n_layers, B, T, 2D) = [fwd; bwd] per layer.

        Stateless: zero initial states. Stateful: row b starts from the states row b ended with in
        the previous batch, and this batch's final states are kept for the next one.
        """
        b = inputs.shape[0]
        lengths = mask.long().sum(dim=1)
        h0, c0 = self.initial_states(b, inputs) if self.stateful else (None, None)
        finals: list[LstmState] = []  # (layer, direction) order
        streams = [inputs, inputs]  # forward, backward
        outputs = []
        for index in range(self.num_layers):
            for direction, stack in enumerate((self.forward_layers, self.backward_layers)):
                # bilm-tf's DropoutWrapper(ResidualWrapper(cell)): the residual adds the input as dropped
                x = self.dropout(streams[direction])
                if h0 is not None and c0 is not None:
                    start = (h0[index, direction], c0[index, direction])
                    out, final = stack[index](x, lengths, start, return_state=True)
                    finals.append(final)
                else:
                    out = stack[index](x, lengths)
                streams[direction] = out + x if index != 0 and self.use_skip_connections else out
            outputs.append(torch.cat(streams, dim=-1))
        if finals:
            shape = (self.num_layers, 2, b)
            self._carry(
                torch.stack([h for h, _ in finals]).view(*shape, self.hidden_size),
                torch.stack([c for _, c in finals]).view(*shape, self.cell_size),
            )
        return torch.stack(outputs)
