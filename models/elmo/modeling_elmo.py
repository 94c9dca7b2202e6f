"""ELMo (Peters et al., 2018) in plain PyTorch, after AllenNLP's ``elmo.py`` / ``elmo_lstm.py``.

    words ──ElmoCharacterMapper──▶ char ids (B, T, 50)
          ──CharCNNEncoder──────▶ token embedding x (B, T+2, D)        (<S>, </S> added by ElmoBiLm)
          ──ElmoLstm (fwd, bwd)─▶ L layers of [h_fwd; h_bwd] (B, T+2, 2D)
    layers = [ [x; x], layer_1, …, layer_L ]  with <S>/</S> stripped  → (L+1, B, T, 2D)
    Elmo:   ELMo_k = γ_k Σ_j s_kj h_j            (models.scalar_mix.ScalarMix)

Configuration uses the original AllenNLP / bilm-tf ``options.json`` format::

    {"lstm": {"use_skip_connections": true, "projection_dim": 512, "cell_clip": 3, "proj_clip": 3,
              "dim": 4096, "n_layers": 2},
     "char_cnn": {"activation": "relu", "filters": [[1, 32], [2, 32], …], "n_highway": 2,
                  "embedding": {"dim": 16}, "n_characters": 262, "max_characters_per_token": 50}}

Deliberate difference from AllenNLP: the LSTM starts every batch from zero states (AllenNLP's ELMo
is *stateful* across batches, so its vectors depend on what was embedded before). Zero states make
extraction deterministic and batched == one-at-a-time.
"""
from __future__ import annotations

import copy
import math
import warnings
from typing import Any, Sequence

import torch
from torch import nn

from models.scalar_mix import ScalarMix

# --------------------------------------------------------------------------------------------
# Characters
# --------------------------------------------------------------------------------------------


class ElmoCharacterMapper:
    """Words → 50 character ids, exactly as AllenNLP's ``ELMoCharacterMapper``.

    UTF-8 bytes 0..255, then special "characters": <S> 256, </S> 257, begin-of-word 258,
    end-of-word 259, padding 260. Every id is shifted by +1 so that 0 marks a padded (absent) word.
    Words longer than 48 bytes are truncated (begin- and end-of-word take the other two slots).
    """

    max_word_length = 50
    beginning_of_sentence_character = 256  # <begin sentence>
    end_of_sentence_character = 257  # <end sentence>
    beginning_of_word_character = 258  # <begin word>
    end_of_word_character = 259  # <end word>
    padding_character = 260  # <padding>
    bos_token = "<S>"
    eos_token = "</S>"

    @classmethod
    def _make_bos_eos(cls, character: int) -> list[int]:
        char_ids = [cls.padding_character] * cls.max_word_length
        char_ids[0] = cls.beginning_of_word_character
        char_ids[1] = character
        char_ids[2] = cls.end_of_word_character
        return char_ids

    @classmethod
    def beginning_of_sentence_characters(cls) -> list[int]:
        return cls._make_bos_eos(cls.beginning_of_sentence_character)

    @classmethod
    def end_of_sentence_characters(cls) -> list[int]:
        return cls._make_bos_eos(cls.end_of_sentence_character)

    @classmethod
    def convert_word_to_char_ids(cls, word: str) -> list[int]:
        """One word → 50 ids in 1..261 (already shifted by +1)."""
        if word == cls.bos_token:
            char_ids = cls.beginning_of_sentence_characters()
        elif word == cls.eos_token:
            char_ids = cls.end_of_sentence_characters()
        else:
            # "ignore" drops lone surrogates; everything else (emoji, CJK…) is plain UTF-8 bytes.
            word_encoded = word.encode("utf-8", "ignore")[: (cls.max_word_length - 2)]
            char_ids = [cls.padding_character] * cls.max_word_length
            char_ids[0] = cls.beginning_of_word_character
            for k, chr_id in enumerate(word_encoded, start=1):
                char_ids[k] = chr_id
            char_ids[len(word_encoded) + 1] = cls.end_of_word_character
        return [c + 1 for c in char_ids]


def batch_to_ids(sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """Sentences of words → (B, T_max, 50) long tensor; padded words are all-zero rows."""
    max_len = max((len(s) for s in sentences), default=0)
    ids = torch.zeros(len(sentences), max_len, ElmoCharacterMapper.max_word_length, dtype=torch.long)
    for i, sentence in enumerate(sentences):
        if sentence:
            ids[i, : len(sentence)] = torch.tensor(
                [ElmoCharacterMapper.convert_word_to_char_ids(w) for w in sentence], dtype=torch.long
            )
    return ids


def add_sentence_boundary_token_ids(
    ids: torch.Tensor, mask: torch.Tensor, bos: torch.Tensor, eos: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Put ``bos`` before and ``eos`` after every (variable-length) sequence.

    ids: (B, T, C) or (B, T); mask: (B, T) bool; bos/eos: (C,) or scalar.
    Returns ids (B, T+2, …) and mask (B, T+2).
    """
    lengths = mask.long().sum(dim=1)
    b, t = mask.shape
    new_shape = (b, t + 2, *ids.shape[2:])
    new_ids = ids.new_zeros(new_shape)
    new_ids[:, 1:-1] = ids
    rows = torch.arange(b, device=ids.device)
    new_ids[:, 0] = bos
    new_ids[rows, lengths + 1] = eos
    new_mask = (new_ids > 0) if ids.dim() == 2 else (new_ids > 0).any(dim=-1)
    return new_ids, new_mask


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse of ``add_sentence_boundary_token_ids`` for activations.

    tensor: (B, T+2, dim); mask: (B, T+2) bool → (B, T, dim) with padding zeroed, mask (B, T).
    """
    lengths = mask.long().sum(dim=1) - 2
    b, t2, dim = tensor.shape
    t = t2 - 2
    positions = torch.arange(t, device=tensor.device)
    new_mask = positions.unsqueeze(0) < lengths.unsqueeze(1)
    new_tensor = tensor[:, 1:-1] * new_mask.unsqueeze(-1).to(tensor.dtype)
    return new_tensor, new_mask


# --------------------------------------------------------------------------------------------
# Character CNN
# --------------------------------------------------------------------------------------------


class Highway(nn.Module):
    """Highway layers (Srivastava et al., 2015) with AllenNLP's parametrisation.

    y = g ⊙ x + (1 − g) ⊙ f(A x + a),  g = σ(B x + b);  one Linear(dim, 2·dim) per layer holds
    [A; B]. The gate bias starts at 1 so the layer initially mostly carries its input.
    """

    def __init__(self, dim: int, num_layers: int = 1, activation: str = "relu") -> None:
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList([nn.Linear(dim, dim * 2) for _ in range(num_layers)])
        self.activation = _activation(activation)
        for layer in self.layers:
            layer.bias.data[dim:].fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., dim) → (..., dim)."""
        for layer in self.layers:
            nonlinear_part, gate = layer(x).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * self.activation(nonlinear_part)
        return x


def _activation(name: str):
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
        self.activation = _activation(cnn["activation"])
        self.highways = Highway(self.n_filters, cnn["n_highway"], activation="relu")
        self.projection = nn.Linear(self.n_filters, self.output_dim, bias=True)
        for width, num in self.filters:
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


# --------------------------------------------------------------------------------------------
# LSTM with projection
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# biLM and ELMo
# --------------------------------------------------------------------------------------------


def normalize_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate an options dict (original format) and fill defaults; returns a deep copy."""
    options = copy.deepcopy(options)
    try:
        lstm, cnn = options["lstm"], options["char_cnn"]
        for key in ("projection_dim", "dim", "n_layers"):
            lstm[key] = int(lstm[key])
        lstm.setdefault("use_skip_connections", True)
        lstm.setdefault("cell_clip", None)
        lstm.setdefault("proj_clip", None)
        cnn["filters"] = [[int(w), int(n)] for w, n in cnn["filters"]]
        cnn["n_highway"] = int(cnn["n_highway"])
        cnn["embedding"]["dim"] = int(cnn["embedding"]["dim"])
        cnn.setdefault("activation", "relu")
        cnn.setdefault("max_characters_per_token", 50)
        cnn.setdefault("n_characters", 262)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"Malformed ELMo options (original options.json format expected): {exc!r}") from exc
    if cnn["max_characters_per_token"] != ElmoCharacterMapper.max_word_length:
        raise ValueError("max_characters_per_token must be 50 (the character mapper's fixed width).")
    if cnn["n_characters"] not in (261, 262):
        raise ValueError(f"n_characters must be 261 or 262, got {cnn['n_characters']}.")
    if lstm["n_layers"] < 1:
        raise ValueError("lstm.n_layers must be >= 1.")
    _activation(cnn["activation"])
    return options


class ElmoBiLm(nn.Module):
    """Char-CNN + bidirectional LSTM stack; adds <S> </S> internally.

    ``forward`` returns the L+1 activations *with* boundaries (what the LM loss needs);
    ``layers`` strips them (what users of the vectors need).
    """

    def __init__(self, options: dict[str, Any], dropout: float = 0.0) -> None:
        super().__init__()
        self.options = normalize_options(options)
        self.char_cnn = CharCNNEncoder(self.options)
        self.lstm = ElmoLstm(self.options, dropout=dropout)
        self.register_buffer(
            "bos_chars", torch.tensor(ElmoCharacterMapper.beginning_of_sentence_characters()) + 1, persistent=False
        )
        self.register_buffer(
            "eos_chars", torch.tensor(ElmoCharacterMapper.end_of_sentence_characters()) + 1, persistent=False
        )

    @property
    def projection_dim(self) -> int:
        return self.options["lstm"]["projection_dim"]

    @property
    def num_layers(self) -> int:
        """Output layers including layer 0 (L + 1)."""
        return self.options["lstm"]["n_layers"] + 1

    def forward(self, char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """char_ids: (B, T, 50) without boundaries.

        Returns activations (L+1, B, T+2, 2D) (layer 0 = [x; x]) and mask (B, T+2) bool, both with
        <S> at position 0 and </S> right after each sentence's last word.
        """
        mask = (char_ids > 0).any(dim=-1)
        ids, mask_bos_eos = add_sentence_boundary_token_ids(char_ids, mask, self.bos_chars, self.eos_chars)
        token = self.token_embedding(ids) * mask_bos_eos.unsqueeze(-1)  # (B, T+2, D)
        lstm_out = self.lstm(token, mask_bos_eos)  # (L, B, T+2, 2D)
        layer0 = torch.cat([token, token], dim=-1).unsqueeze(0)
        return torch.cat([layer0, lstm_out], dim=0), mask_bos_eos

    def token_embedding(self, char_ids: torch.Tensor) -> torch.Tensor:
        """char_ids: (B, T, 50) → (B, T, D), running the char-CNN once per *distinct* word.

        Layer 0 is context-independent, so repeated words ("the", ",", <S>, padding) share one
        CNN pass and a gather; in a batch of running text that removes most of the CNN's work.
        """
        b, t, c = char_ids.shape
        unique, inverse = torch.unique(char_ids.reshape(b * t, c), dim=0, return_inverse=True)
        return self.char_cnn(unique.unsqueeze(0))[0][inverse].view(b, t, -1)

    def layers(self, char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """char_ids: (B, T, 50) → (L+1, B, T, 2D) without boundaries, mask (B, T)."""
        activations, mask = self.forward(char_ids)
        stripped = []
        new_mask = None
        for layer in activations:
            h, new_mask = remove_sentence_boundaries(layer, mask)
            stripped.append(h)
        return torch.stack(stripped), new_mask


class Elmo(nn.Module):
    """ELMo representations for downstream tasks: k scalar mixes of the L+1 biLM layers.

    ``forward(char_ids)`` → {"elmo_representations": k × (B, T, 2D), "mask": (B, T)}.
    The biLM is frozen by default (``requires_grad=False``), as in the paper.
    """

    def __init__(
        self,
        bilm: ElmoBiLm,
        num_output_representations: int = 1,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        requires_grad: bool = False,
    ) -> None:
        super().__init__()
        self.bilm = bilm
        for p in self.bilm.parameters():
            p.requires_grad_(requires_grad)
        self.dropout = nn.Dropout(dropout)
        self.scalar_mixes = nn.ModuleList(
            [ScalarMix(bilm.num_layers, do_layer_norm=do_layer_norm) for _ in range(num_output_representations)]
        )

    def forward(self, char_ids: torch.Tensor) -> dict[str, Any]:
        layers, mask = self.bilm.layers(char_ids)
        reps = [self.dropout(mix(layers, mask)) for mix in self.scalar_mixes]
        return {"elmo_representations": reps, "mask": mask}


# --------------------------------------------------------------------------------------------
# Language-model head (training only)
# --------------------------------------------------------------------------------------------

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
        """char_ids: (B, T, 50); word_ids: (B, T+2) vocabulary ids *with* <S>/</S>, −1 at padding.

        Returns {"loss": fwd + bwd mean NLL, "forward_nll", "backward_nll": summed NLL (nats),
        "num_targets": targets per direction}.
        """
        activations, mask = self.bilm(char_ids)
        top = activations[-1]  # (B, T+2, 2D)
        d = self.bilm.projection_dim
        fwd_states, bwd_states = self.dropout(top[..., :d]), self.dropout(top[..., d:])
        # forward: state t predicts word t+1 (targets exist where mask[t+1]); backward: state t → word t−1
        fwd_sel = mask[:, 1:]
        bwd_sel = mask[:, :-1]
        fwd_out = self.softmax(fwd_states[:, :-1][fwd_sel], word_ids[:, 1:][fwd_sel])
        bwd_out = self.softmax(bwd_states[:, 1:][bwd_sel], word_ids[:, :-1][bwd_sel])
        n = fwd_sel.sum()
        fwd_nll = -fwd_out.output.sum()
        bwd_nll = -bwd_out.output.sum()
        return {
            "loss": (fwd_nll + bwd_nll) / n,
            "forward_nll": fwd_nll.detach(),
            "backward_nll": bwd_nll.detach(),
            "num_targets": n.detach(),
        }


def default_cutoffs(vocab_size: int) -> list[int]:
    """Adaptive-softmax clusters: a ~2k head, then ~4× bigger tails."""
    cutoffs, c = [], 2000
    while c < vocab_size:
        cutoffs.append(c)
        c *= 5
    return cutoffs


def perplexity(nll_sum: float, count: float) -> float:
    return math.exp(nll_sum / max(count, 1.0))
