"""Tokenizer facts the embedders need, read from the tokenizer itself: special tokens and word alignment.

**Special tokens.** One word is encoded with and without ``add_special_tokens``; what the tokenizer
adds before and after the content is the layout of every window: [CLS] … [SEP] (BERT, ELECTRA,
DeBERTa, ModernBERT), <s> … </s> (RoBERTa, XLM-R, BART), … </s> (T5). Nothing is hard-coded per
family. Decoders keep only a leading token: the tokenizer's own BOS where it adds one (Llama,
Gemma, OPT), else the BOS (or EOS) token prepended as GPT-2 is run (a first word then has something to
attend to); never a trailing EOS.

**Pre-split words.** Words are tokenized with ``is_split_into_words=True`` and aligned with the
fast tokenizer's ``word_ids()``. Each word must be tokenized as it is in running text:

- WordPiece (``##`` continuations) and SentencePiece / Metaspace (``▁`` word starts) do so as they are;
- byte-level BPE marks a word start with a space (``Ġ``). A top-level ``ByteLevel`` pre-tokenizer
  (GPT-2, RoBERTa, GPT-NeoX, BART) gets ``add_prefix_space=True``. Where ``ByteLevel`` follows a
  regex ``Split`` (Llama-3, Qwen2), add_prefix_space would put a space before every split of a word
  ("didn't" → "Ġdidn", "Ġ't"), so it is turned off there and each word is given a leading space instead.

:func:`alignment_problems` then checks the result on a probe sentence: every word but the first
must get the same pieces pre-split as in the joined text. A tokenizer that exists only in Python has
no ``word_ids()``: each word is tokenized on its own (``pieces.per_word_pieces``), flagged by the embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import pre_tokenizers

from models.base import ModelLoadError, mostly_unknown
from models.errors import UnknownTextError

PROBE = ("Hello", "world", "didn't", "unbelievably", "crowded", "rooms", ".")


def special_layout(tokenizer, decoder: bool) -> tuple[list[int], list[int]]:
    """(ids before the content, ids after it) for every window, derived from the tokenizer (module doc)."""
    bare = tokenizer("hello", add_special_tokens=False)["input_ids"]
    full = tokenizer("hello", add_special_tokens=True)["input_ids"]
    at = next((i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare), None)
    if not bare or at is None:
        raise ModelLoadError(
            f"{getattr(tokenizer, 'name_or_path', 'tokenizer')}: cannot find the content among the "
            f"special tokens ({full} with, {bare} without them); cannot place special tokens."
        )
    head, tail = list(full[:at]), list(full[at + len(bare) :])
    if not decoder:
        return head, tail
    if head:
        return head, []
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    return ([int(start)] if start is not None else []), []


def _parts(pre) -> list:
    """The members of a ``pre_tokenizers.Sequence`` (it can be indexed but has no len())."""
    parts = []
    while True:
        try:
            parts.append(pre[len(parts)])
        except IndexError:
            return parts


def prepare_word_alignment(tokenizer) -> str:
    """Set up a fast tokenizer for pre-split words (module doc); returns the prefix to put before each word."""
    if not getattr(tokenizer, "is_fast", False):
        return ""
    backend = tokenizer.backend_tokenizer
    pre = backend.pre_tokenizer
    if isinstance(pre, pre_tokenizers.ByteLevel):
        pre.add_prefix_space = True  # mutates the backend's own pre-tokenizer
        tokenizer.add_prefix_space = True
        return ""
    if not isinstance(pre, pre_tokenizers.Sequence):
        return ""
    nested = [part for part in _parts(pre) if isinstance(part, pre_tokenizers.ByteLevel)]
    for part in nested:
        part.add_prefix_space = False  # the leading space given to each word marks its start once
    return " " if nested else ""


def _pieces_by_word(tokenizer, words: list[str], prefix: str) -> list[list[int]]:
    enc = tokenizer([prefix + w for w in words], is_split_into_words=True, add_special_tokens=False)
    out: list[list[int]] = [[] for _ in words]
    for piece, w in zip(enc["input_ids"], enc.word_ids()):
        if w is not None:
            out[w].append(piece)
    return out


def _running_text_pieces(tokenizer, words: list[str]) -> list[list[int]]:
    """The words' pieces in the joined text: a piece belongs to the first word ending after its start."""
    text = " ".join(words)
    ends, pos = [], 0
    for w in words:
        pos = text.index(w, pos) + len(w)
        ends.append(pos)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    out: list[list[int]] = [[] for _ in words]
    for piece, (start, _) in zip(enc["input_ids"], enc["offset_mapping"]):
        out[next((i for i, e in enumerate(ends) if e > start), len(words) - 1)].append(piece)
    return out


def alignment_problems(tokenizer, prefix: str, words: tuple[str, ...] = PROBE) -> list[str]:
    """Words (after the first) whose pre-split pieces differ from their pieces in running text; [] = aligned."""
    words = list(words)
    split, running = _pieces_by_word(tokenizer, words, prefix), _running_text_pieces(tokenizer, words)
    return [
        f"{w!r}: {tokenizer.convert_ids_to_tokens(a)} pre-split vs {tokenizer.convert_ids_to_tokens(b)} in text"
        for w, a, b in zip(words[1:], split[1:], running[1:])
        if a != b
    ]


def _files(path: Path) -> str:
    return ", ".join(sorted(p.name for p in path.glob("*token*") if p.is_file())) or "none"


MISMATCH = (
    "the tokenizer (files: {files}) does not match the model: {what}. "
    "Copy the tokenizer files of the checkpoint this model was trained with into the folder."
)


def check_vocabulary(path: Path, tokenizer, rows: int, config) -> None:
    """Refuse a tokenizer that does not belong to the model (a checkpoint without its tokenizer files, or
    another model's): more ids than the embedding matrix has ``rows``, a special token outside it, fewer
    than half its rows (transformers builds a 5-token tokenizer from ``config.json`` alone), or a padding,
    start or end id other than the one ``config`` names (a BERT tokenizer in a RoBERTa folder: padding 0
    against 1). Such a model runs on ``[UNK]`` and wrong ids and gives plausible-looking numbers. Padded
    matrices (Qwen2, T5, phi: a few hundred spare rows) pass; a tokenizer of another model of the same
    family and size with the same special ids cannot be told from the model's own."""
    n = len(tokenizer)
    outside = sorted({int(i) for i in tokenizer.all_special_ids if not 0 <= int(i) < rows})
    what = None
    if n > rows or outside:
        ids = f"special token ids {outside}" if outside else f"{n} token ids"
        what = f"{ids} but the embedding matrix has {rows} rows"
    elif n < rows / 2:
        what = f"{n} tokens for an embedding matrix of {rows} rows"
    elif disagree := special_id_disagreements(tokenizer, config):
        what = (
            f"{'; '.join(disagree)} (if the tokenizer is the model's and config.json is what is wrong, "
            "correct that id in config.json)"
        )
    if what:
        raise ModelLoadError(f"{path}: " + MISMATCH.format(files=_files(path), what=what))


def special_id_disagreements(tokenizer, config) -> list[str]:
    """Where the tokenizer's padding, start and end ids differ from ``config.json``'s (both set; a config may
    list several end ids, e.g. Llama-3-Instruct's, of which the tokenizer's must be one)."""
    out = []
    for role in ("pad", "bos", "eos"):
        ours, theirs = getattr(tokenizer, f"{role}_token_id", None), getattr(config, f"{role}_token_id", None)
        allowed = set(theirs) if isinstance(theirs, list | tuple) else {theirs}
        if ours is not None and theirs is not None and int(ours) not in allowed:
            out.append(f"its {role}_token_id is {ours}, the model's config says {theirs}")
    return out


CHECKED_WORDS = 20_000  # words of a dataset tokenized to judge whether the model can read it (check_text)


def text_sample(sentences: Sequence[Sequence[str]], words: int = CHECKED_WORDS, seed: int = 0) -> list[int]:
    """Indices, in order, of a seeded random sample of the non-empty ``sentences`` holding about ``words`` words (all
    of a smaller dataset). Random, not every k-th line: a file whose lines alternate (a text and its translation)
    would put one kind of line alone in a periodic sample."""
    nonempty = [n for n, s in enumerate(sentences) if len(s)]
    if not nonempty:
        return []
    order = np.random.default_rng(seed).permutation(nonempty)
    total = np.cumsum([len(sentences[n]) for n in order])
    return sorted(int(n) for n in order[: max(1, int(np.searchsorted(total, words, side="right")))])


def check_known_words(
    path: Path, tokenizer, pieces: list[tuple[list[int], np.ndarray]], least: int = 8, what: str = "a batch"
) -> None:
    """Refuse text (of at least ``least`` words; ``what`` names it) in which most words are nothing but the unknown
    token: a tokenizer that is not the model's, or text the model cannot read; either way the model would read
    each such word as that one token. Tokenizers without an unknown token (byte-level BPE) always pass.
    ``pieces``: per sentence, piece ids and each piece's word index (``pieces.word_pieces``)."""
    unk = tokenizer.unk_token_id
    if unk is None:
        return
    words = unknown = 0
    for ids, word_of in pieces:
        if len(ids):
            known = np.bincount(word_of, weights=np.asarray(ids) != unk)
            words, unknown = words + len(known), unknown + int((known == 0).sum())
    if mostly_unknown(words, unknown, least):
        # The text is named first: a tokenizer whose size does not fit the model is refused at load
        # (check_vocabulary), so what is left here is mostly text this vocabulary cannot read.
        raise UnknownTextError(
            f"{path}: {unknown:,} of {words:,} words of {what} are the unknown token {tokenizer.unk_token!r}, so the "
            "model would read each of them as that one token: this model's vocabulary cannot read the text (another "
            "alphabet, rare technical words). Use text it can read or a model with a larger vocabulary; if the text is "
            f"ordinary, the tokenizer may not be the model's (files: {_files(path)})."
        )
