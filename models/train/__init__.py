"""Training code, apart from the embedders: ``python -m models train KIND [options]``.

Each trainer is a module with ``main(argv) -> int`` and its own options
(``python -m models train KIND --help``); it writes an asset folder the embedders in ``models/``
load, with its ``model_card.json``, whole or not at all (``models.assets.writing_folder``). Importing this package
imports no trainer.

    word2vec.py  word2vec skip-gram / CBOW and fastText with gensim
    glove.py     GloVe in torch (co-occurrence counts, AdaGrad)
    gpt.py       the command line of the GPT-2 trainer; gpt_lm.py its tokenizer, data and loop
    elmo.py      the command line of the ELMo biLM trainer; elmo_loop.py its training steps, checkpoints and
                 held-out perplexity, elmo_data.py its batches and vocabulary, elmo_config.py its named
                 sizes and how --config resolves
    common.py    what model cards record about every run (date, machine)
"""

from __future__ import annotations

# KIND -> trainer module. The word2vec module serves three kinds and reads the kind from argv[0].
TRAINERS: dict[str, str] = {
    "word2vec": "models.train.word2vec",  # skip-gram
    "cbow": "models.train.word2vec",
    "fasttext": "models.train.word2vec",
    "glove": "models.train.glove",
    "gpt": "models.train.gpt",
    "elmo": "models.train.elmo",
}
KIND_IN_ARGV = {"models.train.word2vec"}
