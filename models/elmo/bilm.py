"""The ELMo biLM (char-CNN + biLSTM, <S>/</S> handled inside) and ``Elmo``, its scalar mixes.

char ids (B, T, 50) ──ElmoBiLm.layers──▶ (L+1, B, T, 2D), layer 0 = [x; x]
Elmo:   ELMo_k = γ_k Σ_j s_kj h_j            (models.scalar_mix.ScalarMix)
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from models.elmo.char_cnn import CharCNNEncoder, activation_function
from models.elmo.characters import ElmoCharacterMapper, add_sentence_boundary_token_ids, remove_sentence_boundaries
from models.elmo.lstm import ElmoLstm
from models.scalar_mix import ScalarMix

# The keys an original options.json must have; the rest have the defaults below.
REQUIRED_OPTIONS = (
    "lstm.projection_dim",
    "lstm.dim",
    "lstm.n_layers",
    "char_cnn.filters",
    "char_cnn.n_highway",
    "char_cnn.embedding.dim",
)


def _missing_options(options: dict[str, Any]) -> list[str]:
    missing = []
    for dotted in REQUIRED_OPTIONS:
        node: Any = options
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                missing.append(dotted)
                break
            node = node[part]
    return missing


def normalize_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate an options dict (original format) and fill defaults; returns a deep copy.

    ValueError naming the missing keys (dotted, e.g. ``lstm.n_layers``) or the malformed value.
    """
    if not isinstance(options, dict):
        raise ValueError(f"ELMo options must be a JSON object, got {type(options).__name__}.")
    missing = _missing_options(options)
    if missing:
        raise ValueError(f"ELMo options lack {', '.join(missing)} (original options.json format expected).")
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
    activation_function(cnn["activation"])
    return options


class ElmoBiLm(nn.Module):
    """Char-CNN + bidirectional LSTM stack; adds <S> </S> internally.

    ``forward`` returns the L+1 activations *with* boundaries (what the LM loss needs);
    ``layers`` strips them (what users of the vectors need).

    ``stateful=False`` (default): every row starts from zero LSTM states, so a sentence's vectors do
    not depend on its batch or on earlier calls. ``stateful=True``: the original bilm-tf / AllenNLP
    behaviour: row b of each batch starts from the (h, c) row b ended with in the previous batch
    (both directions, every layer; ``models.elmo.lstm`` says exactly which step), until
    ``reset_states()``.
    """

    def __init__(self, options: dict[str, Any], dropout: float = 0.0, stateful: bool = False) -> None:
        super().__init__()
        self.options = normalize_options(options)
        self.char_cnn = CharCNNEncoder(self.options)
        self.lstm = ElmoLstm(self.options, dropout=dropout, stateful=stateful)
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
    def stateful(self) -> bool:
        return self.lstm.stateful

    @stateful.setter
    def stateful(self, value: bool) -> None:
        """Switching mode also forgets any carried state (a clean start either way)."""
        self.lstm.stateful = bool(value)
        self.lstm.reset_states()

    def reset_states(self) -> None:
        """Stateful mode: the next batch starts from zero states again (no-op when stateless)."""
        self.lstm.reset_states()

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
        # As AllenNLP's Elmo: mix the layers with <S> and </S> (a layer norm's statistics count them), then strip the
        # boundaries, which leaves padding at zero. Without layer norm the order changes nothing (a per-position mix).
        activations, mask_bos_eos = self.bilm(char_ids)
        _, mask = remove_sentence_boundaries(activations[0], mask_bos_eos)
        reps = [
            self.dropout(remove_sentence_boundaries(mix(activations, mask_bos_eos), mask_bos_eos)[0])
            for mix in self.scalar_mixes
        ]
        return {"elmo_representations": reps, "mask": mask}
