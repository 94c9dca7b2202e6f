"""ELMo (Peters et al., 2018) in PyTorch: the model, original-weight I/O, checkpoints and the embedder.

    characters.py  words → char ids, <S>/</S>          char_cnn.py  char-CNN + highway token encoder
    lstm.py        LSTMP cells, the biLSTM stack         bilm.py      ElmoBiLm, Elmo (scalar mixes)
    lm.py          the LM head (training, perplexity)    modeling_elmo.py  overview + every model name
    checkpoint.py  our safetensors checkpoints           hdf5_io.py   AllenNLP/bilm-tf weights.hdf5
    embedder.py    ElmoEmbedder, load_elmo_asset, load_allennlp_elmo (+ find/inspect the original files)
The trainer is ``models/train/elmo.py`` (``python -m models train elmo``).
"""
from models.elmo.bilm import Elmo, ElmoBiLm  # noqa: F401
from models.elmo.char_cnn import CharCNNEncoder, Highway  # noqa: F401
from models.elmo.characters import ElmoCharacterMapper, batch_to_ids  # noqa: F401
from models.elmo.lm import BiLMLanguageModel  # noqa: F401
from models.elmo.lstm import ElmoLstm, LstmCellWithProjection  # noqa: F401
