"""ELMo's character input: words → 50 byte ids, and <S>/</S> sentence boundaries.

words ──ElmoCharacterMapper──▶ char ids (B, T, 50)   (0 = padded word; ids 1..261)
batch_to_ids / char_ids:          the same ids for a whole batch at once: every word joined into one
                                  string, encoded once, its bytes scattered with numpy (no Python
                                  loop per word); ``convert_word_to_char_ids`` stays the reference
add_sentence_boundary_token_ids:  (B, T, 50) → (B, T+2, 50) with <S> first and </S> after each sentence
remove_sentence_boundaries:       activations (B, T+2, dim) → (B, T, dim)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch


class ElmoCharacterMapper:
    """Words → 50 character ids, exactly as AllenNLP's ``ELMoCharacterMapper``.

    UTF-8 bytes 0..255, then special "characters": <S> 256, </S> 257, begin-of-word 258,
    end-of-word 259, padding 260. Every id is shifted by +1 so that 0 marks a padded (absent) word.
    Words longer than 48 bytes are truncated (begin- and end-of-word take the other two slots).
    """

    max_word_length = 50
    beginning_of_sentence_character = 256  # <begin sentence>
    end_of_sentence_character = 257  # <end sentence>
    beginning_of_word_character = 258  # <begin word>
    end_of_word_character = 259  # <end word>
    padding_character = 260  # <padding>
    bos_token = "<S>"
    eos_token = "</S>"

    @classmethod
    def _make_bos_eos(cls, character: int) -> list[int]:
        char_ids = [cls.padding_character] * cls.max_word_length
        char_ids[0] = cls.beginning_of_word_character
        char_ids[1] = character
        char_ids[2] = cls.end_of_word_character
        return char_ids

    @classmethod
    def beginning_of_sentence_characters(cls) -> list[int]:
        return cls._make_bos_eos(cls.beginning_of_sentence_character)

    @classmethod
    def end_of_sentence_characters(cls) -> list[int]:
        return cls._make_bos_eos(cls.end_of_sentence_character)

    @classmethod
    def convert_word_to_char_ids(cls, word: str) -> list[int]:
        """One word → 50 ids in 1..261 (already shifted by +1)."""
        if word == cls.bos_token:
            char_ids = cls.beginning_of_sentence_characters()
        elif word == cls.eos_token:
            char_ids = cls.end_of_sentence_characters()
        else:
            # "ignore" drops lone surrogates; everything else (emoji, CJK…) is plain UTF-8 bytes.
            word_encoded = word.encode("utf-8", "ignore")[: (cls.max_word_length - 2)]
            char_ids = [cls.padding_character] * cls.max_word_length
            char_ids[0] = cls.beginning_of_word_character
            for k, chr_id in enumerate(word_encoded, start=1):
                char_ids[k] = chr_id
            char_ids[len(word_encoded) + 1] = cls.end_of_word_character
        return [c + 1 for c in char_ids]


def batch_to_ids(sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """Sentences of words → (B, T_max, 50) long tensor; padded words are all-zero rows."""
    return torch.from_numpy(char_ids(sentences))


def char_ids(sentences: Sequence[Sequence[str]]) -> np.ndarray:
    """Sentences of words → (B, T_max, 50) int64, word t of sentence b at [b, t]; padded words are 0."""
    lengths = np.fromiter(map(len, sentences), np.int64, count=len(sentences))
    b, t = len(sentences), int(lengths.max(initial=0))
    ids = np.zeros((b, t, ElmoCharacterMapper.max_word_length), np.int64)
    words = list(itertools.chain.from_iterable(sentences))
    if words:  # word j of the batch, in sentence i that starts at word s_i, goes to row i·T + j − s_i
        rows = np.repeat(np.arange(b) * t - (np.cumsum(lengths) - lengths), lengths) + np.arange(len(words))
        ids.reshape(b * t, -1)[rows] = word_char_ids(words)
    return ids


def word_char_ids(words: Sequence[str]) -> np.ndarray:
    """Words → (N, 50) int16, row i == ``convert_word_to_char_ids(words[i])``, without a loop per word.

    One string holds every word; its code points (UTF-32) give each word's UTF-8 byte span, the
    one UTF-8 encoding (lone surrogates dropped, as "ignore") gives the bytes, and the first 48
    bytes of each word are scattered between begin- and end-of-word.
    """
    m = ElmoCharacterMapper
    n, width = len(words), m.max_word_length
    joined = "".join(words)
    char_counts = np.fromiter(map(len, words), np.int64, count=n)
    code_points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), "<u4")
    # UTF-8 bytes per code point: 1 below U+0080, 2 below U+0800, 3 below U+10000, else 4; surrogates 0.
    byte_counts = 1 + (code_points >= 0x80).astype(np.int64) + (code_points >= 0x800) + (code_points >= 0x10000)
    byte_counts[(code_points >= 0xD800) & (code_points < 0xE000)] = 0
    byte_ends = np.concatenate([[0], np.cumsum(byte_counts)])[np.cumsum(char_counts)]
    word_bytes = np.diff(byte_ends, prepend=0)
    data = np.frombuffer(joined.encode("utf-8", "ignore"), np.uint8)
    ids = np.full((n, width), m.padding_character + 1, np.int16)
    ids[:, 0] = m.beginning_of_word_character + 1
    ids[np.arange(n), np.minimum(word_bytes, width - 2) + 1] = m.end_of_word_character + 1
    position = np.arange(len(data)) - np.repeat(byte_ends - word_bytes, word_bytes)  # byte's place in its word
    kept = position < width - 2
    target = np.repeat(np.arange(n) * width + 1, word_bytes) + position  # flat index of (word, 1 + position)
    ids.reshape(-1)[target[kept]] = data[kept].astype(np.int16) + 1
    for token, characters in (
        (m.bos_token, m.beginning_of_sentence_characters()),
        (m.eos_token, m.end_of_sentence_characters()),
    ):
        # == token: as many characters as the (ASCII) token has bytes, and exactly its bytes
        k = len(token)
        candidates = np.flatnonzero((char_counts == k) & (word_bytes == k))
        matches = candidates[(ids[candidates, 1 : k + 1] == np.frombuffer(token.encode(), np.uint8) + 1).all(axis=1)]
        ids[matches] = np.array(characters) + 1
    return ids


def add_sentence_boundary_token_ids(
    ids: torch.Tensor, mask: torch.Tensor, bos: torch.Tensor, eos: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Put ``bos`` before and ``eos`` after every (variable-length) sequence.

    ids: (B, T, C) or (B, T); mask: (B, T) bool; bos/eos: (C,) or scalar.
    Returns ids (B, T+2, …) and mask (B, T+2).
    """
    lengths = mask.long().sum(dim=1)
    b, t = mask.shape
    new_shape = (b, t + 2, *ids.shape[2:])
    new_ids = ids.new_zeros(new_shape)
    new_ids[:, 1:-1] = ids
    rows = torch.arange(b, device=ids.device)
    new_ids[:, 0] = bos
    new_ids[rows, lengths + 1] = eos
    new_mask = (new_ids > 0) if ids.dim() == 2 else (new_ids > 0).any(dim=-1)
    return new_ids, new_mask


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse of ``add_sentence_boundary_token_ids`` for activations.

    tensor: (B, T+2, dim); mask: (B, T+2) bool → (B, T, dim) with padding zeroed, mask (B, T).
    """
    lengths = mask.long().sum(dim=1) - 2
    b, t2, dim = tensor.shape
    t = t2 - 2
    positions = torch.arange(t, device=tensor.device)
    new_mask = positions.unsqueeze(0) < lengths.unsqueeze(1)
    new_tensor = tensor[:, 1:-1] * new_mask.unsqueeze(-1).to(tensor.dtype)
    return new_tensor, new_mask
