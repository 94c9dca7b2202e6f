"""POS tagging with a linear (softmax) probe on frozen representations, layer by layer.

Peters et al. (2018, Table 6) train a linear classifier on each biLM layer's frozen vectors and
report PTB tagging accuracy. Here: CoNLL-2000 train (WSJ 15–18) for training, CoNLL-2000 test
(WSJ 20) for accuracy, gold PTB tags, ``probes.classifier.LinearProbe`` (early stopping on a
held-out tenth of the training tokens). The baseline is each word's majority tag.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Sequence

import numpy as np
import pandas as pd

from probes.classifier import LinearProbe
from probes.conll import DATASET, conll_slice, feature_key
from probes.features import get_features
from probes.layers import LayerSpec, as_layer_specs, needed_layers
from probes.registry import ChartSpec, ProbeSpec, RunContext
from probes.results import ProbeResult

TEST_SET = "conll2000-test"
MAJORITY = "majority-tag"


class MajorityTagBaseline:
    """Each word's most frequent training tag; unseen words get the overall most frequent tag.

    Ties are broken by the tag's overall frequency, then alphabetically (deterministic).
    """

    def fit(self, words: Sequence[str], tags: Sequence[str]) -> "MajorityTagBaseline":
        if len(words) == 0:
            raise ValueError("Cannot fit on zero tokens.")
        overall = Counter(tags)
        per_word: dict[str, Counter] = defaultdict(Counter)
        for w, t in zip(words, tags):
            per_word[w][t] += 1
        rank = {t: (-c, t) for t, c in overall.items()}
        self.default_ = min(overall, key=lambda t: rank[t])
        self.table_ = {w: min(c, key=lambda t: (-c[t], rank[t])) for w, c in per_word.items()}
        return self

    def predict(self, words: Sequence[str]) -> np.ndarray:
        return np.array([self.table_.get(w, self.default_) for w in words])

    def score(self, words: Sequence[str], tags: Sequence[str]) -> float:
        tags = np.asarray(tags)
        if len(tags) == 0:
            raise ValueError("Cannot score on zero tokens.")
        return float((self.predict(words) == tags).mean())


def run_pos_baseline(limit: int | None = None) -> ProbeResult:
    """Majority tag per word (unknown words: the most frequent tag), CoNLL-2000 train -> test."""
    train, test = conll_slice("train", limit), conll_slice("test", limit)
    base = MajorityTagBaseline().fit([w for s in train for w in s.words], [t for s in train for t in s.pos])
    words, tags = [w for s in test for w in s.words], [t for s in test for t in s.pos]
    acc = base.score(words, tags)
    return ProbeResult(MAJORITY, "pos", [{"dataset": TEST_SET, "layer": "baseline", "metric": "accuracy",
                                          "value": round(100 * acc, 2), "n": len(tags)}],
                       dataset=DATASET, params={"limit": limit})


def pos_baselines(ctx: RunContext, **_options) -> list[ProbeResult]:
    return [run_pos_baseline(ctx.limit)]


def run_pos(embedder, layers: str | list[LayerSpec] | None = None, ctx: RunContext = RunContext()) -> ProbeResult:
    """Linear POS probe on every requested layer spec (indices, "mean", "mix:w…")."""
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    t0 = time.perf_counter()
    train, test = conll_slice("train", ctx.limit), conll_slice("test", ctx.limit)
    needed = needed_layers(specs, embedder.num_layers)
    progress = ctx.progress
    ftr = get_features(embedder, feature_key("train", ctx.limit), [list(s.words) for s in train], needed,
                       progress=ctx.sub_progress(0.0, 0.6), show_progress=ctx.show_progress, root=ctx.feature_root)
    fte = get_features(embedder, feature_key("test", ctx.limit), [list(s.words) for s in test], needed,
                       progress=ctx.sub_progress(0.6, 0.75), show_progress=ctx.show_progress, root=ctx.feature_root)
    t_feat = time.perf_counter() - t0
    y_tr = np.array([t for s in train for t in s.pos])
    y_te = np.array([t for s in test for t in s.pos])
    rows, history = [], {}
    for k, spec in enumerate(specs):
        if spec.is_single:
            Xtr, Xte = ftr.layer(spec.index), fte.layer(spec.index)
        else:
            Xtr = spec.combine({j: np.asarray(ftr.layer(j), np.float32) for j in needed}, embedder.num_layers)
            Xte = spec.combine({j: np.asarray(fte.layer(j), np.float32) for j in needed}, embedder.num_layers)
        probe = LinearProbe(seed=ctx.seed, device=ctx.device).fit(Xtr, y_tr)
        acc = probe.score(Xte, y_te)
        rows.append({"dataset": TEST_SET, "layer": spec.label, "metric": "accuracy",
                     "value": round(100 * acc, 2), "n": len(y_te)})
        history[spec.label] = probe.history_
        if progress is not None:
            progress(0.75 + 0.25 * (k + 1) / len(specs), f"POS probe layer {spec.label}: {100 * acc:.1f}%")
    return ProbeResult(
        embedder.name, "pos", rows, dataset=DATASET, fingerprint=embedder.fingerprint(),
        params={"layers": [s.label for s in specs], "limit": ctx.limit, "seed": ctx.seed},
        extra={"train_tokens": len(y_tr), "test_tokens": len(y_te), "feature_s": round(t_feat, 1),
               "total_s": round(time.perf_counter() - t0, 1), "history": history})


def pos_tables(df: pd.DataFrame, extras: list[dict]) -> dict[str, pd.DataFrame]:
    pos = df[(df.probe == "pos") & (df.metric == "accuracy")]
    if pos.empty:
        return {}
    t = pos[["model", "layer", "value"]].rename(columns={"value": "accuracy (CoNLL-2000 test)"})
    return {"pos": t.reset_index(drop=True)}


PROBE = ProbeSpec(
    name="pos",
    title="POS — linear probe (CoNLL-2000)",
    description="linear POS probe per layer (CoNLL-2000)",
    run=run_pos,
    baselines=pos_baselines,
    tables=pos_tables,
    table_titles={"pos": "POS tagging: linear probe per layer, accuracy on CoNLL-2000 test (WSJ 20)"},
    chart=ChartSpec(metrics=("accuracy",), datasets=(TEST_SET,)),
    baseline_models={MAJORITY: "majority tag per word"},
)
