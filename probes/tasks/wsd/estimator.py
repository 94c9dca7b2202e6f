"""The 1-nearest-neighbour sense classifier of Peters et al. (2018, section 5.3), scikit-learn style.

A sense embedding for every SemCor sense key is the mean of the contextual vectors of its tagged
tokens. An evaluation instance takes the nearest (cosine) sense among the WordNet senses of its
lemma+POS that were seen in training; when none was seen it backs off to WordNet's first sense.

    wsd = NearestSenseWSD().fit(X_semcor, keys_semcor)          # X: (num_tokens, dim)
    pred = wsd.predict(X_eval, lemmas, poses)                    # list of sense keys (or None)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from corpora import wordnet
from models.base import default_device
from probes.tasks.wsd.scoring import score


@dataclass(frozen=True)
class SenseAssignments:
    """Which tagged token belongs to which sense, built once per corpus and shared by every layer's fit.

    keys:  (num_senses,) sense key of each centroid row, in order of first occurrence
    token: (num_pairs,) token index of each (token, sense) pair (a token with several keys has several)
    sense: (num_pairs,) centroid row of each pair
    """

    keys: tuple[str, ...]
    token: np.ndarray
    sense: np.ndarray
    num_tokens: int

    @classmethod
    def from_keys(cls, sense_keys: Sequence[Sequence[str]]) -> SenseAssignments:
        index: dict[str, int] = {}
        token, sense = [], []
        for i, keys in enumerate(sense_keys):
            for k in keys:
                token.append(i)
                sense.append(index.setdefault(k, len(index)))
        return cls(tuple(index), np.asarray(token, np.int64), np.asarray(sense, np.int64), len(sense_keys))


class NearestSenseWSD:
    """Sense centroids from SemCor, nearest-centroid prediction restricted to the lemma's senses.

    Args:
        senses_fn: (lemma, upos) -> candidate sense keys in WordNet order
            (default ``corpora.wordnet.senses``).
        first_sense_fn: (lemma, upos) -> WordNet first-sense key or None
            (default ``corpora.wordnet.first_sense_key``).
        device: torch device for the matrix products (default: CUDA when present).
        batch_size: instances per matrix product in ``predict``.
        tie_tol: cosines within this of the best count as ties, resolved in ``senses_fn``'s order (WordNet
            order; with a labels inventory the most frequent label first: ``probes.tasks.wsd.words``).
    """

    def __init__(
        self,
        senses_fn: Callable[[str, str], Sequence[str]] | None = None,
        first_sense_fn: Callable[[str, str], str | None] | None = None,
        device: str | torch.device | None = None,
        batch_size: int = 2048,
        tie_tol: float = 1e-5,
    ) -> None:
        if senses_fn is None or first_sense_fn is None:
            senses_fn = senses_fn or (lambda lemma, pos: [s.key for s in wordnet.senses(lemma, pos)])
            first_sense_fn = first_sense_fn or wordnet.first_sense_key
        self.senses_fn = senses_fn
        self.first_sense_fn = first_sense_fn
        self.device = torch.device(device) if device is not None else default_device()
        self.batch_size = batch_size
        self.tie_tol = tie_tol
        self.sense_index_: dict[str, int] = {}
        self.centroids_: torch.Tensor | None = None  # (num_senses, dim), L2-normalised
        self.counts_: np.ndarray | None = None

    def fit(self, X: np.ndarray, sense_keys: Sequence[Sequence[str]] | SenseAssignments) -> NearestSenseWSD:
        """X: (num_tokens, dim) vectors of SemCor tagged tokens; sense_keys[i]: that token's keys
        (or a prebuilt :class:`SenseAssignments` of them, to share across layers).

        A token with several keys contributes to each of their centroids.
        """
        a = sense_keys if isinstance(sense_keys, SenseAssignments) else SenseAssignments.from_keys(sense_keys)
        if len(X) != a.num_tokens:
            raise ValueError(f"{len(X)} vectors for {a.num_tokens} tokens.")
        if not len(a.token):
            raise ValueError("No sense-tagged tokens to fit on (empty SemCor slice?).")
        self.sense_index_ = {k: i for i, k in enumerate(a.keys)}
        X_t = torch.as_tensor(np.asarray(X, dtype=np.float32), device=self.device)
        tok = torch.as_tensor(a.token, device=self.device)
        sid = torch.as_tensor(a.sense, device=self.device)
        S = len(a.keys)
        sums = torch.zeros(S, X_t.shape[1], device=self.device).index_add_(0, sid, X_t.index_select(0, tok))
        counts = torch.zeros(S, device=self.device).index_add_(0, sid, torch.ones_like(sid, dtype=torch.float))
        self.centroids_ = torch.nn.functional.normalize(sums / counts[:, None], dim=1)
        self.counts_ = counts.cpu().numpy()
        return self

    def candidates(self, lemma: str, pos: str) -> list[int]:
        """Centroid rows of the lemma's WordNet senses that were seen in SemCor (WordNet order)."""
        return [self.sense_index_[k] for k in self.senses_fn(lemma, pos) if k in self.sense_index_]

    @torch.inference_mode()
    def predict(self, X: np.ndarray, lemmas: Sequence[str], poses: Sequence[str]) -> list[str | None]:
        """X: (num_instances, dim). Nearest seen candidate sense, else WordNet first sense, else None."""
        if self.centroids_ is None:
            raise RuntimeError("Call fit() before predict().")
        if not (len(X) == len(lemmas) == len(poses)):
            raise ValueError("X, lemmas and poses must have the same length.")
        keys = list(self.sense_index_)
        memo: dict[tuple[str, str], list[int]] = {}  # many instances share a lemma+POS
        cand = []
        for pair in zip(lemmas, poses):
            if pair not in memo:
                memo[pair] = self.candidates(*pair)
            cand.append(memo[pair])
        preds: list[str | None] = [None] * len(cand)
        with_cand = [i for i, c in enumerate(cand) if c]
        for i, c in enumerate(cand):
            if not c:
                preds[i] = self.first_sense_fn(lemmas[i], poses[i])
        if not with_cand:
            return preds
        width = max(len(cand[i]) for i in with_cand)
        # Padded candidate matrix (num_instances, width); -1 pads are masked to -inf below.
        pad = np.full((len(with_cand), width), -1, dtype=np.int64)
        for r, i in enumerate(with_cand):
            pad[r, : len(cand[i])] = cand[i]
        X_all = torch.as_tensor(np.asarray(X, dtype=np.float32)[with_cand], device=self.device)
        pad_t = torch.as_tensor(pad, device=self.device)
        for start in range(0, len(with_cand), self.batch_size):
            xb = torch.nn.functional.normalize(X_all[start : start + self.batch_size], dim=1)  # (B, d)
            cb = pad_t[start : start + self.batch_size]  # (B, width)
            sims = torch.einsum("bd,bwd->bw", xb, self.centroids_[cb.clamp(min=0)])  # (B, width)
            sims = sims.masked_fill(cb < 0, float("-inf"))
            # Ties (e.g. a static model gives every sense seen only with one word form the same
            # centroid) go to the candidate listed first by senses_fn, not to rounding noise.
            near_best = sims >= sims.max(dim=1, keepdim=True).values - self.tie_tol
            first = near_best.to(torch.uint8).argmax(dim=1, keepdim=True)  # first True
            best = cb.gather(1, first).squeeze(1).cpu().numpy()
            for r, b in enumerate(best, start=start):
                preds[with_cand[r]] = keys[int(b)]
        return preds

    def score(
        self, X: np.ndarray, lemmas: Sequence[str], poses: Sequence[str], golds: Sequence[Sequence[str]]
    ) -> float:
        """F1 (percent) of ``predict`` against gold keys."""
        return score(self.predict(X, lemmas, poses), golds)["F1"]


def first_sense_predictions(
    lemmas: Sequence[str], poses: Sequence[str], first_sense_fn: Callable[[str, str], str | None] | None = None
) -> list[str | None]:
    """The WordNet first-sense baseline (no embeddings)."""
    first_sense_fn = first_sense_fn or wordnet.first_sense_key
    return [first_sense_fn(lemma, p) for lemma, p in zip(lemmas, poses)]
