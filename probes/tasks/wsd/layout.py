"""Tokens of interest -> the words fed to the model ("pieces") and back.

A multiword SemCor token such as ``Fulton_County_Grand_Jury`` is fed to the model as its pieces and
represented by the mean of their vectors; an evaluation-framework word "prime minister" likewise.
``PieceLayout`` records which piece rows make up each token, so that only those rows need to be
stored in the feature cache (``restrict``) and pooled back per layer (``token_vectors``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch


@dataclass
class PieceLayout:
    """Words fed to the model (pieces) and which piece rows make up each token of interest.

    sentences: piece-level sentences for ``get_features``.
    rows:      (num_piece_refs,) global piece rows, grouped by token.
    starts:    (num_tokens,) start of each token's group in ``rows`` (np.add.reduceat segments).
    counts:    (num_tokens,) pieces per token.
    """

    sentences: list[list[str]]
    rows: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    def token_vectors(self, layer: np.ndarray) -> np.ndarray:
        """(num_tokens, dim) float32: mean of each token's piece vectors in ``layer`` (num_pieces, dim)."""
        if len(self.starts) == 0:
            return np.zeros((0, layer.shape[1]), np.float32)
        if len(self.rows) == len(layer) and np.array_equal(self.rows, np.arange(len(layer))):
            X = _float_tensor(layer)  # a restricted layout: every row, in order
        else:
            X = _float_tensor(layer[self.rows])  # fancy indexing reads only these rows
        if len(self.rows) == len(self.starts):  # one piece per token: nothing to pool
            return X.numpy()
        # One index_add_ (multi-threaded) instead of np.add.reduceat, which took ~1.7 s per SemCor layer.
        token_of_row = torch.from_numpy(np.repeat(np.arange(len(self.starts)), self.counts.astype(np.int64)))
        sums = torch.zeros(len(self.starts), X.shape[1]).index_add_(0, token_of_row, X)
        return (sums / torch.from_numpy(self.counts)[:, None]).numpy()

    def subset(self, tokens: Sequence[int]) -> PieceLayout:
        """The layout of only ``tokens`` (indices into this layout's tokens, in the order given): its
        ``token_vectors`` reads just their piece rows (a few rows of a memory-mapped layer)."""
        tokens = np.asarray(tokens, np.int64)
        counts = self.counts[tokens]
        rows = [self.rows[s : s + int(c)] for s, c in zip(self.starts[tokens], counts)]
        starts = np.concatenate([[0], np.cumsum(counts.astype(np.int64))[:-1]]).astype(np.int64)
        return replace(self, rows=np.concatenate(rows) if rows else np.zeros(0, np.int64), starts=starts, counts=counts)

    def restrict(self) -> tuple[np.ndarray, PieceLayout]:
        """(keep, layout): the piece rows this layout reads, for ``get_features(..., keep=keep)``, and
        the same layout re-indexed onto features stored with that ``keep``."""
        keep = np.unique(self.rows)
        return keep, replace(self, rows=np.searchsorted(keep, self.rows))


def _float_tensor(a: np.ndarray) -> torch.Tensor:
    """float32 tensor of (possibly read-only, memory-mapped) float16/32 rows; only read, never written.

    torch widens float16 in ~0.1 s per SemCor layer; ``np.asarray(..., float32)`` took 0.2-1.1 s.
    """
    with warnings.catch_warnings():  # "non-writable array": we never write through it
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(np.asarray(a)).float()


def build_layout(sentences: Sequence[Sequence[Sequence[str]]], selected: Sequence[Sequence[int]]) -> PieceLayout:
    """sentences[i][t]: the pieces of token t of sentence i; selected[i]: token indices wanted.

    Tokens of interest are returned in sentence order, then in the order of ``selected[i]``.
    """
    flat: list[list[str]] = []
    rows, starts, counts = [], [], []
    offset = 0
    for toks, sel in zip(sentences, selected):
        tok_start = np.cumsum([0] + [len(p) for p in toks])
        flat.append([piece for p in toks for piece in p])
        for t in sel:
            starts.append(len(rows))
            counts.append(len(toks[t]))
            rows.extend(range(offset + tok_start[t], offset + tok_start[t + 1]))
        offset += int(tok_start[-1])
    return PieceLayout(flat, np.asarray(rows, np.int64), np.asarray(starts, np.int64), np.asarray(counts, np.float32))


def eval_word_pieces(word: str) -> list[str]:
    """An evaluation-framework word as model input: split on spaces ("prime minister"), but a
    hyphenated word ("change-ringing") stays one word, as the framework treats it."""
    return word.split() or [word]
