"""Dependency trees as the structural probe sees them (Hewitt & Manning 2019): gold distances and depths, edges,
random control trees, and the metrics and result rows with sentence-resampled intervals.

Metrics (the paper's, punctuation — UPOS PUNCT, ``DepTree.scored`` — left out of every one):

- UUAS: the minimum spanning tree of the predicted distances over the scored words
  (``scipy.sparse.csgraph.minimum_spanning_tree``), its undirected edges against the gold edges between
  scored words, pooled over sentences;
- DSpr.: per word, the Spearman correlation of its row of predicted and gold distances; averaged over the
  sentences of each length (5–50 scored words), then over lengths;
- root accuracy: the scored word of least predicted depth is the gold root;
- NSpr.: Spearman of predicted and gold depths per sentence, averaged as DSpr.

Spearman values are reported × 100 (like the percentages, so one chart axis holds them); the paper prints
them as 0.xx. H&M's code counts punctuation in DSpr./NSpr. and buckets by the full length: here a sentence's
length is its number of scored words. A constant prediction (no information) has correlation 0.
Every row's 95% interval resamples sentences (``probes.stats.intervals.grouped_interval``). DSpr. and NSpr.
keep every length in every resample, so that each averages over the same lengths as the estimate (a plain
resample drops the rare long lengths and drifts up): each length keeps its sentences' mean and draws its
sentences' deviations from it from a pool of adjacent lengths holding ≥ 20 residual degrees of freedom
(``probes.stats.strata.strata_mean_interval``), so that a length of one sentence varies too (resampled within
itself it never did, and the interval covered ~80 % on EWT test's length counts).

    structural_rows("ud_ewt-test", "3", "distance", probe.predict(X_test), test)   # UUAS and DSpr. rows
    stat_row(dataset, layer, "accuracy", stats, ratio, n)    # any per-sentence (hits, total) statistic

Tree distances are ``scipy.sparse.csgraph.shortest_path`` on the tree; random control trees are
``networkx.random_labeled_tree`` (uniform over labelled trees) hung from a random root.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import minimum_spanning_tree, shortest_path
from scipy.stats import rankdata

from corpora.conllu import DepTree
from probes.stats.intervals import grouped_interval
from probes.stats.strata import strata_mean_interval

LENGTHS = np.arange(5, 51)  # sentence lengths (scored words) DSpr. and NSpr. average over
Edge = tuple[int, int]


# --- trees ------------------------------------------------------------------------------------------------


def tree_distances(heads: Sequence[int]) -> np.ndarray:
    """(n, n) path lengths in the tree of ``heads`` (1-based, 0 = root), as float32."""
    n = len(heads)
    child = [i for i, h in enumerate(heads) if h > 0]
    adj = csr_matrix((np.ones(len(child)), (child, [heads[i] - 1 for i in child])), shape=(n, n))
    return shortest_path(adj, unweighted=True, directed=False).astype(np.float32)


@dataclass(frozen=True)
class GoldTrees:
    """The trees of one split and their distance matrices, computed once: every layer and probe reads them."""

    trees: tuple[DepTree, ...]
    distances: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, trees: Sequence[DepTree]) -> GoldTrees:
        return cls(tuple(trees), tuple(tree_distances(t.heads) for t in trees))

    def __len__(self) -> int:
        return len(self.trees)

    def part(self, rows: slice) -> GoldTrees:
        return GoldTrees(self.trees[rows], self.distances[rows])

    def depths(self, s: int) -> np.ndarray:
        """(n,) edges from each word of sentence ``s`` to its root word."""
        return self.distances[s][self.trees[s].heads.index(0)]

    def targets(self, kind: str) -> list[np.ndarray]:
        """What the probe fits: distances (n, n) or depths (n,) per sentence, punctuation included (as the paper)."""
        return list(self.distances) if kind == "distance" else [self.depths(s) for s in range(len(self))]


def random_tree(tree: DepTree, rng: np.random.Generator) -> DepTree:
    """The same words under a uniformly random labelled tree hung from a random root (the control task)."""
    n = len(tree.words)
    if n == 1:
        return tree
    root = int(rng.integers(n))
    parents = dict(nx.bfs_predecessors(nx.random_labeled_tree(n, seed=int(rng.integers(2**31))), root))
    heads = tuple(0 if i == root else parents[i] + 1 for i in range(n))
    return replace(tree, heads=heads, deprels=("_",) * n)


def gold_edges(tree: DepTree) -> set[Edge]:
    """Undirected edges (i < j, 0-based) of the tree between scored words."""
    keep = tree.scored
    return {(min(i, h - 1), max(i, h - 1)) for i, h in enumerate(tree.heads) if h > 0 and keep[i] and keep[h - 1]}


def mst_edges(dist: np.ndarray) -> set[Edge]:
    """Undirected edges (i < j) of the minimum spanning tree of a full (n, n) distance matrix.

    scipy reads a zero as "no edge", so the weights are shifted to ≥ 1 first: every spanning tree has
    n − 1 edges, so a constant shift changes no tree's rank.
    """
    dist = np.asarray(dist, dtype=np.float64)
    if len(dist) < 2:
        return set()
    weights = np.where(np.eye(len(dist), dtype=bool), 0.0, dist - dist.min() + 1.0)
    rows, cols = minimum_spanning_tree(weights).nonzero()
    return {(min(i, j), max(i, j)) for i, j in zip(rows.tolist(), cols.tolist())}


def scored_edges(edges: set[Edge], scored: np.ndarray) -> set[Edge]:
    """Edges over the scored words' positions (0…m−1) mapped back to the sentence's word indices."""
    idx = np.flatnonzero(scored)
    return {(int(idx[i]), int(idx[j])) for i, j in edges}


def predicted_edges(pred: np.ndarray, tree: DepTree) -> set[Edge]:
    """The minimum spanning tree of predicted distances over the scored words, as sentence word indices."""
    keep = tree.scored
    return scored_edges(mst_edges(pred[np.ix_(keep, keep)]), keep)


def chain_edges(tree: DepTree) -> set[Edge]:
    """The left-to-right chain over the scored words (the linear-structure baseline)."""
    idx = np.flatnonzero(tree.scored).tolist()
    return set(zip(idx, idx[1:]))


# --- metrics: per-sentence statistics, rows with sentence-resampled intervals -----------------------------


def uuas_counts(pred_edges: Sequence[set[Edge]], trees: Sequence[DepTree]) -> np.ndarray:
    """(sentences, 2): gold edges found, gold edges."""
    gold = [gold_edges(t) for t in trees]
    return np.array([[len(p & g), len(g)] for p, g in zip(pred_edges, gold)], dtype=np.float64)


def row_spearman(pred: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row of ``pred`` with the same row of ``gold`` (2-D), 0 for a constant row."""
    a, b = rankdata(pred, axis=-1), rankdata(gold, axis=-1)
    a, b = a - a.mean(-1, keepdims=True), b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    return np.divide((a * b).sum(-1), den, out=np.zeros(len(a)), where=den > 0)


def spearman_by_length(pred: Sequence[np.ndarray], gold: GoldTrees, kind: str) -> np.ndarray:
    """(sentences, 2·|LENGTHS|): per sentence its summed correlations and their count in its length's column."""
    stats = np.zeros((len(gold), 2 * len(LENGTHS)))
    for s, (p, tree) in enumerate(zip(pred, gold.trees)):
        keep = tree.scored
        m = int(keep.sum())
        if not LENGTHS[0] <= m <= LENGTHS[-1]:
            continue
        if kind == "distance":
            rho = row_spearman(p[np.ix_(keep, keep)], gold.distances[s][np.ix_(keep, keep)])
        else:
            rho = row_spearman(p[keep][None], gold.depths(s)[keep][None])
        col = m - LENGTHS[0]
        stats[s, col], stats[s, len(LENGTHS) + col] = rho.sum(), len(rho)
    return stats


def length_macro(sums: np.ndarray) -> np.ndarray:
    """(R, 2·|LENGTHS|) summed stats -> (R,) mean over lengths present of the mean correlation (× 100)."""
    k = len(LENGTHS)
    total, count = sums[:, :k], sums[:, k:]
    per_length = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    lengths = (count > 0).sum(1)
    return np.divide(100 * per_length.sum(1), lengths, out=np.full(len(sums), np.nan), where=lengths > 0)


def length_interval(stats: np.ndarray, *, seed: int = 0, **kw: Any) -> tuple[float, float] | tuple[None, None]:
    """95% interval of ``length_macro`` of (sentences, 2·|LENGTHS|) per-sentence stats: the mean over lengths of each
    length's mean sentence correlation (× 100), every length kept and its spread pooled with its neighbours'
    (``strata_mean_interval``; ``kw``: its pool, resamples). Sentences outside 5–50 add nothing and are left out.
    Within a length every sentence has the same count (its words, or 1), so the length's ratio of sums is the
    mean of its sentences' correlations. A resampled mean can pass ±100 (the deviations are borrowed, not its own):
    the bounds are clipped to the statistic's range."""
    k = len(LENGTHS)
    count = stats[:, k:]
    rows = np.flatnonzero(count.sum(1) > 0)
    column = count[rows].argmax(1)
    lo, hi = strata_mean_interval(100 * stats[rows, column] / count[rows, column], column, seed=seed, **kw)
    return (None, None) if lo is None else (max(lo, -100.0), min(hi, 100.0))


def ratio(sums: np.ndarray) -> np.ndarray:
    """(R, 2) summed (hits, total) -> percent; NaN where there is nothing to score (total 0)."""
    return np.divide(100 * sums[:, 0], sums[:, 1], out=np.full(len(sums), np.nan), where=sums[:, 1] > 0)


def difference(sums: np.ndarray) -> np.ndarray:
    """(R, 4) summed (hits, total, control hits, control total) -> points of task minus control."""
    return ratio(sums[:, :2]) - ratio(sums[:, 2:])


def stat_row(
    dataset: str,
    layer: str,
    metric: str,
    stats: np.ndarray,
    statistic: Callable,
    n: int,
    *,
    seed: int = 0,
    interval: Callable[..., tuple] | None = None,
) -> dict:
    """A result row: the statistic of the summed per-sentence stats and its interval resampling sentences
    (``interval(stats, seed=seed)`` -> (lo, hi); default ``grouped_interval`` of ``statistic``); a set with nothing
    to score (no scored edge or sentence length: ``n`` 0) has no value, never 0.00."""
    value = float(statistic(stats.sum(0, keepdims=True))[0])
    if not np.isfinite(value):
        why = f"nothing to score: no {metric} in this set's sentences (too short, or punctuation only)"
        return dict(dataset=dataset, layer=layer, metric=metric, value=None, n=int(n), missing=why)
    lo, hi = grouped_interval(stats, statistic, seed=seed) if interval is None else interval(stats, seed=seed)
    return {
        "dataset": dataset,
        "layer": layer,
        "metric": metric,
        "value": round(value, 2),
        "n": int(n),
        "lo": lo,
        "hi": hi,
        "unit": "sentence",
        "clusters": int(stats.shape[0]),
    }


def uuas_row(dataset: str, layer: str, pred_edges: Sequence[set[Edge]], trees: Sequence[DepTree], **kw) -> dict:
    counts = uuas_counts(pred_edges, trees)
    return stat_row(dataset, layer, kw.pop("metric", "UUAS"), counts, ratio, int(counts[:, 1].sum()), **kw)


def structural_rows(
    dataset: str, layer: str, kind: str, pred: Sequence[np.ndarray], gold: GoldTrees, *, seed: int = 0
) -> list[dict]:
    """UUAS and DSpr. of predicted distances, or root accuracy and NSpr. of predicted depths."""
    spr, trees = spearman_by_length(pred, gold, kind), gold.trees
    metric, n = ("DSpr" if kind == "distance" else "NSpr"), int((spr[:, len(LENGTHS) :] > 0).any(1).sum())
    last = stat_row(dataset, layer, metric, spr, length_macro, n, seed=seed, interval=length_interval)
    if kind == "distance":
        return [uuas_row(dataset, layer, [predicted_edges(p, t) for p, t in zip(pred, trees)], trees, seed=seed), last]
    hits = [
        [float(np.flatnonzero(t.scored)[np.argmin(p[t.scored])] == t.heads.index(0)), 1.0]
        for p, t in zip(pred, trees)
        if t.scored[t.heads.index(0)]
    ]
    root = stat_row(dataset, layer, "root_acc", np.array(hits).reshape(-1, 2), ratio, len(hits), seed=seed)
    return [root, last]
