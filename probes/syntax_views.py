"""What the app's Syntax page computes (no streamlit): a small structural probe per (model, layer), and the
attention-head counts of the head-syntax probe, each on a small slice of UD English EWT.

The full probes (``probes.tasks.structural``, ``probes.tasks.head_syntax``) train on all of EWT train and
report intervals; a page needs an answer in seconds, so it fits the same estimator on the first
``TRAIN_LIMIT`` training sentences (early stopping on their last tenth, as the probe does without a dev
file; at least the probe's 6 epochs, more on a smaller slice so B takes about ``STEPS`` Adam steps) and
reads the vectors through the same feature-cache entry as ``python -m probes structural --limit TRAIN_LIMIT``
(``load_splits`` names the slice). Nothing here changes a result of the probes.

    probes = fit_tree_probes(embedder, layer=3)            # TreeProbes: distance and depth probe of layer 3
    dist, depth = probes.predict(vectors)                   # (n, n) squared distances, (n,) squared norms
    counts = head_counts(embedder, limit=HEADS_LIMIT)       # HeadCounts over the first EWT dev sentences
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from corpora.cache import files_fingerprint
from corpora.conllu import DepTree, iter_trees
from corpora.paths import data_path
from features.background import duration
from features.entries import has_layers
from features.extract import get_features
from probes.estimate import words_per_second
from probes.estimators.head_syntax import HeadCounts
from probes.estimators.structural import BATCH_SIZE, KINDS, StructuralProbe
from probes.estimators.tree_metrics import GoldTrees
from probes.progress import ProgressFn
from probes.registry import RunContext
from probes.tasks.head_syntax import count_heads, load_trees
from probes.tasks.structural import EPOCHS, EWT, fit_tree_probe, load_splits, training_part

TRAIN_LIMIT = 500  # EWT training sentences the page's probes are fitted on
HEADS_LIMIT = 200  # EWT dev sentences the head heatmap counts
#: a fit has at least the probe's ``EPOCHS`` (``python -m probes structural``'s default) and enough for about this
#: many Adam steps (batches of ``BATCH_SIZE`` sentences) on a small slice
STEPS = 200


@dataclass(frozen=True)
class TreeProbes:
    """The distance and depth probes of one layer, fitted on ``sentences`` EWT training sentences."""

    distance: StructuralProbe
    depth: StructuralProbe
    layer: int
    sentences: int
    feature_s: float
    fit_s: float

    def predict(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One sentence's (n, dim) vectors -> predicted squared distances (n, n) and squared norms (n,)."""
        X = [np.asarray(vectors, dtype=np.float32)]
        return self.distance.predict(X)[0], self.depth.predict(X)[0]


def train_slice(limit: int = TRAIN_LIMIT) -> tuple[str, tuple[DepTree, ...]]:
    """The feature-cache key and trees of EWT train's first ``limit`` sentences (the structural probe's key).

    Read once per version of the file (``corpora.cache.files_fingerprint``: path, size, mtime, inode, ctime): the
    page asks on every run, and parsing the slice was most of a Syntax page run (0.65 of 0.9 s, measured)."""
    path = data_path(EWT.format("train"))
    return _read_train_slice(path, tuple(files_fingerprint([path])), limit)


@lru_cache(maxsize=8)
def _read_train_slice(path: Path, version: tuple, limit: int) -> tuple[str, tuple[DepTree, ...]]:
    files, trees = load_splits(limit, train=path, test=path)  # the key is the train file's alone
    return files.feature_key("train", limit), tuple(trees["train"])


def train_cached(embedder, limit: int = TRAIN_LIMIT, feature_root: Path | None = None) -> bool:
    """Whether the feature cache holds every layer of the training slice."""
    return has_layers(embedder, train_slice(limit)[0], range(embedder.num_layers), feature_root)


def extraction_estimate(embedder, limit: int = TRAIN_LIMIT) -> str:
    """What the first fit costs before it starts: the words to embed and their time from a short warm-up."""
    _, trees = train_slice(limit)
    sentences = [list(t.words) for t in trees]
    words = sum(map(len, sentences))
    seconds = words / words_per_second(embedder, sentences)
    return f"{words:,} words to embed once (~{duration(seconds)} on this machine, measured)"


def train_features(embedder, limit: int = TRAIN_LIMIT, progress: ProgressFn | None = None, feature_root=None):
    """(Features of every layer, trees) of EWT train's first ``limit`` sentences, extracted once into the cache.

    Every layer at once: moving the page's layer slider then costs a fit, not an extraction."""
    key, trees = train_slice(limit)
    sentences = [list(t.words) for t in trees]
    feats = get_features(embedder, key, sentences, progress=progress, show_progress=False, root=feature_root)
    return feats, trees


def fit_tree_probes(
    embedder,
    layer: int,
    *,
    limit: int = TRAIN_LIMIT,
    epochs: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    feature_root: Path | None = None,
) -> TreeProbes:
    """The distance and depth probes of ``layer`` (0 … num_layers − 1), trained on EWT train's first ``limit``.

    ``epochs`` (None: ``EPOCHS``, or more for about ``STEPS`` Adam steps: 50 sentences are 3 batches an epoch,
    and 6 epochs of them leave B near its random start); early stopping on the held-out tenth ends it sooner.
    """
    if not 0 <= layer < embedder.num_layers:
        raise ValueError(f"layer {layer}: {embedder.name} has layers 0…{embedder.num_layers - 1}.")
    t0 = time.perf_counter()
    feats, trees = train_features(embedder, limit, progress, feature_root)
    X = [np.asarray(feats.sentence(layer, i), dtype=np.float32) for i in range(len(trees))]
    t1 = time.perf_counter()
    steps_per_epoch = -(-training_part(len(X)) // BATCH_SIZE)  # early stopping on the last tenth (no dev file)
    epochs = epochs or max(EPOCHS, -(-STEPS // steps_per_epoch))
    gold = GoldTrees.of(trees)
    fitted = {kind: fit_tree_probe(kind, X, gold, epochs=epochs, seed=seed) for kind in KINDS}
    return TreeProbes(fitted["distance"], fitted["depth"], layer, len(trees), t1 - t0, time.perf_counter() - t1)


def ewt_trees(split: str) -> list[DepTree]:
    """Every tree of EWT ``split`` ("dev" or "test"): the sentences the page offers."""
    if split not in ("dev", "test"):
        raise ValueError(f"split {split!r}: choose dev or test.")
    return list(iter_trees(data_path(EWT.format(split))))


def head_counts(embedder, limit: int = HEADS_LIMIT, progress: ProgressFn | None = None) -> HeadCounts:
    """The head-syntax probe's counts (every layer × head, relation, direction) on EWT dev's first ``limit``."""
    _, trees, _ = load_trees(limit)
    return count_heads(embedder, trees, RunContext(limit=limit, progress=progress, show_progress=False))
