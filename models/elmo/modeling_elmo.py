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

Default difference from AllenNLP: the LSTM starts every batch from zero states (AllenNLP's ELMo
is *stateful* across batches, so its vectors depend on what was embedded before). Zero states make
extraction deterministic and batched == one-at-a-time. ``ElmoBiLm(options, stateful=True)`` runs
the original's way (``models.elmo.lstm`` says exactly how); it reproduces bilm-tf's own test outputs.
"""
from __future__ import annotations

# The model is split by concern; this module keeps the overview above and the public names.
from models.elmo.bilm import Elmo, ElmoBiLm, normalize_options  # noqa: F401
from models.elmo.char_cnn import CharCNNEncoder, Highway  # noqa: F401
from models.elmo.characters import (  # noqa: F401
    ElmoCharacterMapper,
    add_sentence_boundary_token_ids,
    batch_to_ids,
    remove_sentence_boundaries,
)
from models.elmo.lm import SPECIAL_WORDS, BiLMLanguageModel, default_cutoffs, perplexity  # noqa: F401
from models.elmo.lstm import ElmoLstm, LstmCellWithProjection, _reverse_padded  # noqa: F401
