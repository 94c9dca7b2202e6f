"""Transformer embedders (BERT family and GPT-2) behind the common :class:`~models.base.Embedder` API.

    emb = load_minilm()                                 # or BertEmbedder("/path/to/bert-dir")
    out = emb.embed([["The", "bank", "closed", "."]])
    out[0].vectors.shape                                # (7, 4, 384): layer 0 = embedding output

Pipeline for a call to ``embed`` (all sentences at once, results in input order):

1. **Pieces.** One fast-tokenizer call over all sentences (``is_split_into_words=True``, no
   special tokens); ``word_ids()`` maps pieces to words. A word the tokenizer drops entirely
   (e.g. a zero-width space) gets the unknown token, so every word has at least one piece.
2. **Windows.** A sentence longer than the model's maximum (512 − 2 pieces for BERT, the GPT
   context − 1) is cut into overlapping windows (``stride`` = half a window by default); every
   piece takes its vector from the window where it has the most context: the most context on its
   poorer side for BERT, the most left context for GPT. Nothing is truncated.
3. **Batches.** Windows ("rows") are sorted by length and packed so that rows × padded length stays
   within ``max_tokens`` (and, with attention, the attention maps within a memory budget); runs in
   ``torch.inference_mode``, fp16 on CUDA only, pinned host memory for transfers on CUDA.
4. **Words.** Per batch and layer, one ``index_select`` of the pieces that supply word vectors,
   scaled by their pooling weight — 1/n for each of a word's n pieces ("mean") or 1 for its first
   piece ("first") — and one ``index_add_`` into the words' slots of one (L+1, words, D) array
   (windowed words may draw pieces from two windows). Each sentence's vectors are a view of it.

Word-level attention: for every layer and head, A_word = Q · A_piece · Kᵀ with K the 0/1
word-membership matrix of the key pieces (a word receives the *sum* of the attention to its
pieces) and Q the membership matrix divided by piece counts (a word's row is the *mean* over its
query pieces). Special tokens ([CLS], [SEP], <s>) are dropped and every row renormalised to sum to
1, i.e. the rows are the attention distribution among the sentence's words. ``piece_attention``
gives the raw piece view, special tokens included. Attention needs the whole sentence in one
window: a longer sentence gives a ValueError saying how many windows it would need.
"""
from __future__ import annotations

import os

# Before transformers/tokenizers are imported (they read these once): no fork warnings, no network.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Modules, one concern each:
#   checkpoint.py  a local checkpoint folder: validated files, fast tokenizer, fingerprint
#   pieces.py      word ↔ piece alignment, windows, batches, pooling weights, word attention
#   embedder.py    TransformerEmbedder: the shared embed / piece_attention machinery
#   bert.py        BertEmbedder, load_minilm          gpt.py  GptEmbedder, load_gpt_asset
from models.transformer.bert import BertEmbedder, load_minilm  # noqa: E402
from models.transformer.embedder import POOLINGS, TransformerEmbedder  # noqa: E402
from models.transformer.gpt import GptEmbedder, load_gpt_asset  # noqa: E402

_TransformerEmbedder = TransformerEmbedder   # the former private name

__all__ = ["POOLINGS", "BertEmbedder", "GptEmbedder", "TransformerEmbedder", "load_gpt_asset", "load_minilm"]
