"""The WSD probe's one loop: features of a training and an evaluation split -> 1-NN predictions per layer spec.

Held-out evaluation fits sense centroids on the training split and predicts the evaluation split;
k-fold evaluation (``folds=K``) cuts the one split into K seeded folds, predicts each fold from the
others and pools the predictions, so every instance is predicted exactly once by a model that never
saw it. Layer combinations (``mean``, ``mix:…``) are weighted sums of the single layers' token
vectors, accumulated in place. The built-in SemCor → ALL run and a run on files are this same loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from features.extract import get_features
from features.store import data_hash
from probes.layers import LayerSpec, needed_layers
from probes.registry import RunContext
from probes.tasks.wsd.estimator import NearestSenseWSD, SenseAssignments
from probes.tasks.wsd.inventory import WORDNET, Inventory
from probes.tasks.wsd.sources import WsdSplit

Preds = list[str | None]


@dataclass
class Plan:
    """What to predict: ``test`` from ``train`` (held out), or ``train`` by ``folds``-fold cross-validation."""

    train: WsdSplit
    test: WsdSplit | None
    kind: str
    folds: int | None = None
    seed: int = 0

    @property
    def evaluated(self) -> WsdSplit:
        return self.test if self.test is not None else self.train

    @cached_property
    def data_hash(self) -> str:
        """The run's data hash: the pieces fed to the model, the instance ids and gold labels of both splits
        (hashed once per plan: the probe and its baselines share it)."""
        splits = [self.train] + ([self.test] if self.test is not None else [])
        return data_hash(*(part for s in splits for part in (s.layout.sentences, [s.ids], s.golds)))

    def fold_ids(self) -> np.ndarray:
        """Fold of every training instance: a seeded permutation cut into ``folds`` near-equal parts."""
        n = len(self.train)
        fold = np.empty(n, np.int64)
        for f, part in enumerate(np.array_split(np.random.default_rng(self.seed).permutation(n), self.folds)):
            fold[part] = f
        return fold

    def inventory(self, train_idx: Sequence[int] | None = None) -> Inventory:
        """The inventory for the evaluated targets, counted on the training instances ``train_idx``.

        ``None``: all of them — except for a WordNet inventory, whose 1-NN candidates and backoff need
        no counts, so none are taken (SemCor: 225k instances); pass ``range(len(train))`` for them.
        """
        golds = self.train.golds if self.kind != WORDNET or train_idx is not None else []
        targets = None if self.train.lemmas is None else self.train.targets
        if train_idx is not None:
            golds = [golds[i] for i in train_idx]
            targets = None if targets is None else [targets[i] for i in train_idx]
        return Inventory.build(self.kind, targets, golds, self.evaluated.targets)


def _fit_predict(
    plan: Plan, inventories: list[Inventory], Xs: np.ndarray, Xe: np.ndarray | None, fold: np.ndarray | None, device
) -> tuple[Preds, NearestSenseWSD]:
    ev = plan.evaluated
    lemmas, poses = ev.lemmas, ev.poses

    def probe(inv: Inventory) -> NearestSenseWSD:
        return NearestSenseWSD(senses_fn=inv.senses, first_sense_fn=inv.backoff, device=device)

    if fold is None:
        wsd = probe(inventories[0]).fit(Xs, plan.train.labels)
        return wsd.predict(Xe, lemmas, poses), wsd
    golds = plan.train.golds
    preds: Preds = [None] * len(golds)
    for f, inv in enumerate(inventories):
        tr, te = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        wsd = probe(inv).fit(Xs[tr], SenseAssignments.from_keys([golds[i] for i in tr]))
        for i, p in zip(te, wsd.predict(Xs[te], [lemmas[i] for i in te], [poses[i] for i in te])):
            preds[i] = p
    return preds, wsd


def layer_predictions(
    embedder, specs: list[LayerSpec], ctx: RunContext, plan: Plan, on_predictions: Callable[[str, Preds], None]
) -> dict:
    """Call ``on_predictions(spec label, predictions of the evaluated split)`` for every spec, in the
    order single layers then combinations; returns extras (coverage, timings)."""
    needed = needed_layers(specs, embedder.num_layers)
    held_out = plan.test is not None
    t0 = time.perf_counter()
    train_feats = get_features(
        embedder,
        plan.train.feature_key,
        plan.train.layout.sentences,
        needed,
        keep=plan.train.keep,
        progress=ctx.sub_progress(0.0, 0.8 if held_out else 0.9),
        show_progress=ctx.show_progress,
        root=ctx.feature_root,
    )
    test_feats = (
        None
        if not held_out
        else get_features(
            embedder,
            plan.test.feature_key,
            plan.test.layout.sentences,
            needed,
            keep=plan.test.keep,
            progress=ctx.sub_progress(0.8, 0.9),
            show_progress=ctx.show_progress,
            root=ctx.feature_root,
        )
    )
    feature_s = round(time.perf_counter() - t0, 1)
    fold = None if held_out else plan.fold_ids()
    if held_out or plan.kind == WORDNET:  # a WordNet inventory does not depend on the training counts
        inventories = [plan.inventory()] * (1 if held_out else plan.folds)
    else:
        inventories = [plan.inventory(np.flatnonzero(fold != f)) for f in range(plan.folds)]

    singles = {s.index: s for s in specs if s.is_single}
    combos = {s.label: s.weights(embedder.num_layers) for s in specs if not s.is_single}
    acc: dict[str, list[torch.Tensor | None]] = {}  # weighted sums of (train, test) token vectors
    extra: dict = {}
    for j in needed:
        Xs = plan.train.layout.token_vectors(train_feats.layer(j))
        Xe = plan.test.layout.token_vectors(test_feats.layer(j)) if held_out else None
        if j in singles:
            if ctx.progress is not None:
                ctx.progress(0.9 + 0.1 * needed.index(j) / len(needed), f"WSD layer {j}: sense centroids, 1-NN scoring")
            preds, wsd = _fit_predict(plan, inventories, Xs, Xe, fold, ctx.device)
            on_predictions(singles[j].label, preds)
            if not extra and held_out:  # the same for every layer: one inventory, one set of seen senses
                ev = plan.evaluated
                extra = {
                    "senses": len(wsd.sense_index_),
                    "instances_with_seen_sense": int(
                        sum(bool(wsd.candidates(lemma, p)) for lemma, p in zip(ev.lemmas, ev.poses))
                    ),
                }
        for label, w in combos.items():  # in place, multi-threaded: SemCor is ~226k x dim per layer
            if label not in acc:
                acc[label] = [torch.zeros(Xs.shape), None if Xe is None else torch.zeros(Xe.shape)]
            acc[label][0].add_(torch.from_numpy(Xs), alpha=float(w[j]))
            if Xe is not None:
                acc[label][1].add_(torch.from_numpy(Xe), alpha=float(w[j]))
        if ctx.progress is not None:
            ctx.progress(0.9 + 0.1 * (needed.index(j) + 1) / len(needed), f"WSD layer {j}")
    for label in combos:
        if ctx.progress is not None:
            ctx.progress(1.0, f"WSD layer {label}: sense centroids, 1-NN scoring")
        Xe = None if acc[label][1] is None else acc[label][1].numpy()
        preds, _ = _fit_predict(plan, inventories, acc[label][0].numpy(), Xe, fold, ctx.device)
        on_predictions(label, preds)
    return {"feature_s": feature_s, "data_hash": plan.data_hash, **extra}
