"""Attention-head syntax (Clark et al. 2019, "What does BERT look at?"): does a head attend to the gold head?

For every dependency (dependent i, head h, relation r) of a tree and every layer × head, the head predicts
i's head as the most-attended *other* word (word-level attention, ``models.base``: pieces pooled to words,
special tokens dropped; a word's attention to itself is never its prediction: it cannot be its own head), as
Clark et al.'s ``attn_head_predictor`` does (github.com/clarkkev/attention-analysis). A word that gives (or
is given) no weight to any other word — a decoder's first word, the last word's column — predicts nothing
and is wrong, where their argmax over zeros would pick the first other word:

- direction ``dep->head``: the row of the dependent i (the word i attends to most); right when it is h;
- direction ``head->dep``: the column of the dependent i (the word that attends to i most; their
  ``mode="transpose"``); right when it is h. Each dependency is scored once, so a head with several
  dependents of relation r can get every one of them right.

The baseline of the paper: always predicting the word at a fixed offset k from the dependent (−3 … +3, as
Clark et al.'s −3 … +2 with +3 added for symmetry; 0 would be the word itself, never its head), on the same
dependencies; per relation the best offset is the baseline to beat, the same in both directions (both predict
the dependent's head). Relations are UD's base relations (``nmod`` for ``nmod:poss``); ``all`` pools every
dependency. Punctuation arcs count like the others; the root's arc is not scored (its head is no word): EWT
test's 25,094 words less 2,077 roots are the 23,017 dependencies.

    counts = HeadCounts(layers, heads)
    counts.add(attentions, tree)          # (layers, heads, n, n) word attention of one sentence
    counts.accuracy("dep->head", "det")   # (layers, heads) in percent

Per-sentence counts are kept, so intervals resample sentences (``probes.stats.intervals.grouped_interval``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from corpora.conllu import DepTree
from probes.estimators.tree_metrics import ratio, stat_row

DIRECTIONS = ("dep->head", "head->dep")
OFFSETS = (-3, -2, -1, 1, 2, 3)
ALL = "all"


def arcs(tree: DepTree) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Dependents (0-based), their heads (0-based) and base relations of every non-root arc."""
    dep = np.array([i for i, h in enumerate(tree.heads) if h > 0], dtype=np.int64)
    head = np.array([tree.heads[i] - 1 for i in dep], dtype=np.int64)
    return dep, head, [tree.deprels[i].split(":")[0] for i in dep]


@dataclass
class HeadCounts:
    """Per sentence and relation: dependencies, and how many each (layer, head, direction) got right.

    hits[r]:  list over sentences of (directions, layers, heads) counts; total[r]: list of counts per sentence.
    offset_hits[r]: list over sentences of (directions, offsets) counts.
    """

    layers: int
    heads: int
    hits: dict[str, list[np.ndarray]] = field(default_factory=dict)
    offset_hits: dict[str, list[np.ndarray]] = field(default_factory=dict)
    total: dict[str, list[int]] = field(default_factory=dict)
    sentences: int = 0

    def add(self, attentions: np.ndarray | None, tree: DepTree) -> None:
        """Count one sentence: ``attentions`` (layers, heads, n, n), or None for the offset baselines only."""
        dep, head, rels = arcs(tree)
        n = len(tree.words)
        if attentions is not None:
            others = np.where(np.eye(n, dtype=bool), -np.inf, attentions)  # (layers, heads, n, n), self left out
            # no prediction (-1) where no other word has any weight: a decoder's first word attends to itself
            # only, and an argmax over its zeros would "predict" the next word, often its head
            attended = np.where(others.max(-1) > 0, others.argmax(-1), -1)  # (layers, heads, n)
            attending = np.where(others.max(-2) > 0, others.argmax(-2), -1)
            right = np.stack([attended[:, :, dep] == head, attending[:, :, dep] == head])  # (2, layers, heads, arcs)
        at_offset = np.stack([dep + k == head for k in OFFSETS], -1)  # (arcs, offsets)
        off = np.stack([at_offset, at_offset])  # the same baseline in both directions
        for rel in [ALL, *sorted(set(rels))]:
            mask = np.ones(len(dep), bool) if rel == ALL else np.array([r == rel for r in rels])
            self.total.setdefault(rel, []).append(int(mask.sum()))
            self.offset_hits.setdefault(rel, []).append(off[:, mask].sum(1))
            if attentions is not None:
                self.hits.setdefault(rel, []).append(right[..., mask].sum(-1))
        self.sentences += 1

    def relations(self, min_count: int = 1) -> list[str]:
        """``all`` and the relations with at least ``min_count`` dependencies, most frequent first."""
        sizes = {r: sum(t) for r, t in self.total.items()}
        return [ALL] + sorted((r for r in sizes if r != ALL and sizes[r] >= min_count), key=lambda r: -sizes[r])

    def accuracy(self, direction: str, rel: str) -> np.ndarray:
        """(layers, heads) accuracy in percent of every head for ``rel`` in ``direction``."""
        d = DIRECTIONS.index(direction)
        return 100 * np.sum(self.hits[rel], 0)[d] / max(sum(self.total[rel]), 1)

    def offset_accuracy(self, direction: str, rel: str) -> np.ndarray:
        """(offsets,) accuracy in percent of each fixed offset."""
        d = DIRECTIONS.index(direction)
        return 100 * np.sum(self.offset_hits[rel], 0)[d] / max(sum(self.total[rel]), 1)

    def _stats(self, rel: str, hits: list[np.ndarray]) -> np.ndarray:
        """(sentences with rel, 2) of (hits, dependencies) for an interval resampling sentences."""
        keep = [k for k, t in enumerate(self.total[rel]) if t]
        return np.array([[hits[k], self.total[rel][k]] for k in keep], dtype=np.float64)

    def head_row(self, dataset: str, direction: str, rel: str, layer: int, head: int, seed: int = 0) -> dict:
        """Result row of one head (layer index into the attention layers, from 0) with its interval."""
        d = DIRECTIONS.index(direction)
        stats = self._stats(rel, [h[d, layer, head] for h in self.hits[rel]])
        row = stat_row(dataset, str(layer + 1), "accuracy", stats, ratio, sum(self.total[rel]), seed=seed)
        return {**row, "head": head}

    def offset_row(
        self, dataset: str, direction: str, rel: str, seed: int = 0, chooser: HeadCounts | None = None
    ) -> dict:
        """The best fixed offset's row (layer "baseline", ``offset`` = k), chosen on ``chooser`` (default self)."""
        d = DIRECTIONS.index(direction)
        best = int(np.argmax((chooser or self).offset_accuracy(direction, rel)))
        stats = self._stats(rel, [h[d, best] for h in self.offset_hits[rel]])
        row = stat_row(dataset, "baseline", "accuracy", stats, ratio, sum(self.total[rel]), seed=seed)
        return {**row, "offset": OFFSETS[best]}
