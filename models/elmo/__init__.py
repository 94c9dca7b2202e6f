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

One concern a module:

    characters.py  words → char ids, <S>/</S>          char_cnn.py  char-CNN + highway token encoder
    lstm.py        LSTMP cells, the biLSTM stack         bilm.py      ElmoBiLm, Elmo (scalar mixes)
    lm.py          the LM head (training, perplexity)    checkpoint.py  our safetensors checkpoints
    hdf5_io.py     AllenNLP/bilm-tf weights.hdf5
    embedder.py    ElmoEmbedder, load_elmo_asset, load_allennlp_elmo (+ find/inspect the original files)
The trainer is ``models/train/elmo.py`` (``python -m models train elmo``).
"""

from models.elmo.bilm import Elmo, ElmoBiLm  # noqa: F401
from models.elmo.char_cnn import CharCNNEncoder, Highway  # noqa: F401
from models.elmo.characters import ElmoCharacterMapper, batch_to_ids  # noqa: F401
from models.elmo.lm import BiLMLanguageModel  # noqa: F401
from models.elmo.lstm import ElmoLstm, LstmCellWithProjection  # noqa: F401
