"""The ELMo trainer's data: sentence pieces, length-bucketed batches, the softmax vocabulary, encoding.

Used by ``models.train.elmo`` (``python -m models train elmo``). A batch is encoded as char ids
(B, T, 50) and word ids (B, T+2) with ``<S>``/``</S>`` around every sentence.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from models.elmo.characters import ElmoCharacterMapper
from models.elmo.lm import SPECIAL_WORDS


def chop(sentences: Sequence[Sequence[str]], max_len: int) -> list[list[str]]:
    """Cut sentences into pieces of at most ``max_len`` tokens; drops empty sentences."""
    out = []
    for s in sentences:
        for i in range(0, len(s), max_len):
            out.append(list(s[i : i + max_len]))
    return out


def make_batches(sentences: Sequence[Sequence[str]], batch_tokens: int, seed: int | None) -> list[list[int]]:
    """Indices of sentences grouped by similar length, ≤ batch_tokens padded tokens per batch.

    With a seed: shuffled, sorted within pools of ~100 batches, batch order shuffled (so length
    buckets are mixed across training); without: fully length-sorted (evaluation).
    """
    order = list(range(len(sentences)))
    rng = random.Random(seed)
    if seed is None:
        pools = [sorted(order, key=lambda i: len(sentences[i]))]
    else:
        rng.shuffle(order)
        size = max(1, 100 * batch_tokens // 25)  # ~100 batches of 25-token sentences
        pools = [sorted(order[s : s + size], key=lambda i: len(sentences[i])) for s in range(0, len(order), size)]
    batches: list[list[int]] = []
    for pool in pools:
        cur: list[int] = []
        longest = 0
        for i in pool:
            n = len(sentences[i]) + 2
            if cur and max(longest, n) * (len(cur) + 1) > batch_tokens:
                batches.append(cur)
                cur, longest = [], 0
            cur.append(i)
            longest = max(longest, n)
        if cur:
            batches.append(cur)
    if seed is not None:
        rng.shuffle(batches)
    return batches


class BatchEncoder:
    """Sentences → (char ids (B, T, 50), word ids (B, T+2) with <S>/</S>), caching per-word ids."""

    def __init__(self, vocab: list[str]) -> None:
        self.word_to_id = {w: i for i, w in enumerate(vocab)}
        self.unk = self.word_to_id["<UNK>"]
        self.bos = self.word_to_id["<S>"]
        self.eos = self.word_to_id["</S>"]
        self._chars: dict[str, list[int]] = {}

    def chars(self, word: str) -> list[int]:
        ids = self._chars.get(word)
        if ids is None:
            ids = self._chars[word] = ElmoCharacterMapper.convert_word_to_char_ids(word)
        return ids

    def __call__(self, sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        t = max(len(s) for s in sentences)
        pad_chars = [0] * ElmoCharacterMapper.max_word_length
        char_rows, word_rows = [], []
        for s in sentences:
            char_rows.append([self.chars(w) for w in s] + [pad_chars] * (t - len(s)))
            word_rows.append(
                [self.bos] + [self.word_to_id.get(w, self.unk) for w in s] + [self.eos] + [0] * (t - len(s))
            )
        return torch.tensor(char_rows, dtype=torch.long), torch.tensor(word_rows, dtype=torch.long)


def build_vocab(counts: dict[str, int], size: int) -> list[str]:
    """</S>, <S>, <UNK>, then the most frequent words (frequency order suits the adaptive softmax)."""
    ranked = sorted(((w, c) for w, c in counts.items() if w not in SPECIAL_WORDS), key=lambda kv: (-kv[1], kv[0]))
    return SPECIAL_WORDS + [w for w, _ in ranked[: max(0, size - len(SPECIAL_WORDS))]]
