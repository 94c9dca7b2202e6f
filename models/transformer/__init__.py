"""Transformer embedders (encoders and decoders, any local Hugging Face checkpoint) behind the common
:class:`~models.base.Embedder` API.

    emb = load_hf_checkpoint("/path/to/any-checkpoint")   # or load_embedder("minilm") (models.registry)
    out = emb.embed([["The", "bank", "closed", "."]])
    out[0].vectors.shape                                # (7, 4, 384): layer 0 = embedding output

Pipeline for a call to ``embed`` (all sentences at once, results in input order):

1. **Pieces.** One fast-tokenizer call over all sentences (``is_split_into_words=True``, no
   special tokens); ``word_ids()`` maps pieces to words (``tokens.py``: each word tokenized as in
   running text, for WordPiece, byte-level BPE and SentencePiece alike; a Python-only tokenizer
   falls back to one word at a time, flagged). A word the tokenizer drops entirely (e.g. a
   zero-width space) gets the unknown token, so every word has at least one piece.
2. **Windows.** A sentence longer than the model's maximum (512 − 2 pieces for BERT, the GPT
   context − 1) is cut into overlapping windows (``stride`` = half a window by default); every
   piece takes its vector from the window where it has the most context: the most context on its
   poorer side for BERT, the most left context for GPT. Nothing is truncated.
3. **Batches.** Windows ("rows") are sorted by length and packed so that rows × padded length stays
   within ``max_tokens`` (and, with attention, the attention maps within a memory budget); runs in
   ``torch.inference_mode``, pinned host memory for transfers on CUDA; out of GPU memory, the
   budget is halved and the rest re-packed (``embedder.py``).
4. **Words.** Per batch and layer, one ``index_select`` of the pieces that supply word vectors,
   scaled by their pooling weight — 1/n for each of a word's n pieces ("mean") or 1 for its first
   ("first") or last ("last") piece — and one ``index_add_`` into the words' slots of one (L+1, words, D) array
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

# Before tokenizers is imported (it reads this once): no fork warnings. Local checkpoints are read with
# local_files_only=True, so no network is used for them; hf: ids download through models.hub.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Modules, one concern each:
#   checkpoint.py  a local checkpoint folder: validated files, config, tokenizer, fingerprint
#   refusals.py    what is refused (custom code, missing/corrupt/extra tensors, a bad first forward
#                  pass), naming files and tensors
#   loading.py     the base model class and from_pretrained, loading report checked (also from headers only)
#   memory.py      dtype choice, weights' size before loading, free memory, forward-pass estimate
#   tokens.py      special tokens and pre-split word alignment, read from the tokenizer
#   pieces.py      word ↔ piece alignment, windows, batches, padding, pooling weights, word attention
#   embedder.py    TransformerEmbedder: the shared embed / piece_attention machinery, OOM back-off
#   bert.py        BertEmbedder (encoders), load_minilm(its pip folder)   gpt.py  GptEmbedder (decoders), load_gpt_asset
#   auto.py        load_hf_checkpoint / inspect_checkpoint: any local checkpoint, class from its config
from models.transformer.auto import architecture_role, inspect_checkpoint, load_hf_checkpoint
from models.transformer.bert import BertEmbedder, load_minilm
from models.transformer.embedder import POOLINGS, TransformerEmbedder
from models.transformer.gpt import GptEmbedder, load_gpt_asset
from models.transformer.memory import estimate_memory

__all__ = [
    "POOLINGS",
    "BertEmbedder",
    "GptEmbedder",
    "TransformerEmbedder",
    "architecture_role",
    "estimate_memory",
    "inspect_checkpoint",
    "load_gpt_asset",
    "load_hf_checkpoint",
    "load_minilm",
]
