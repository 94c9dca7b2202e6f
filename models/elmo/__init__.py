"""ELMo (Peters et al., 2018) in PyTorch: model, original-weight I/O, trainer and embedder."""
from models.elmo.modeling_elmo import (  # noqa: F401
    BiLMLanguageModel,
    CharCNNEncoder,
    Elmo,
    ElmoBiLm,
    ElmoCharacterMapper,
    ElmoLstm,
    Highway,
    LstmCellWithProjection,
    batch_to_ids,
)
