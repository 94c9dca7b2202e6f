"""Result rows of the WSD probe: F1/P/R per evaluation split with 95% intervals, F1 per POS.

An instance is correct (answered with one of its gold labels), wrong, or unanswered (no candidate
and no backoff). F1 = 2c / (a + n), P = c / a, R = c / n (Raganato et al. 2017). When every
instance is answered the three equal the accuracy and the interval is the accuracy's
(``probes.stats.intervals.accuracy_interval``); otherwise it is the bootstrap over the three outcome
categories, with the same seed for F1, P and R. The bootstrap resamples the split's unit
(``probes.stats.units.wsd_units``: documents for the framework's sets, whose ids name them) and every
row states it. Each split's per-instance outcomes and units are kept in ``extra`` (``keep_instances``)
for paired tests; the breakdown rows (F1 per POS, per target word of a lexical sample) are subsets of
a split and are not kept separately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from probes.stats.intervals import accuracy_interval, categorical_interval, grouped_interval, keep_instances
from probes.stats.units import Units, wsd_units
from probes.tasks.wsd.scoring import UPOS, score

_STATISTICS = {  # resampled (correct, wrong, unanswered) counts (R, 3) -> percent
    "F1": lambda c: 200.0 * c[:, 0] / np.maximum(2 * c[:, 0] + 2 * c[:, 1] + c[:, 2], 1),
    "P": lambda c: 100.0 * c[:, 0] / np.maximum(c[:, 0] + c[:, 1], 1),
    "R": lambda c: 100.0 * c[:, 0] / np.maximum(c.sum(1), 1),
}


def outcomes(preds: Sequence[str | None], golds: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """(correct, answered) booleans per instance."""
    answered = np.array([p is not None for p in preds], dtype=bool)
    correct = np.array([p is not None and p in set(g) for p, g in zip(preds, golds)], dtype=bool)
    return correct, answered


def split_rows(
    dataset: str,
    layer: str,
    preds: Sequence[str | None],
    golds: Sequence[Sequence[str]],
    *,
    metrics: Sequence[str] = ("F1", "P", "R"),
    seed: int = 0,
    units: Units | None = None,
) -> list[dict]:
    """Rows of one split: each metric's value (framework scoring, 2 decimals), n, lo, hi, unit, clusters."""
    sc = score(preds, golds)
    correct, answered = outcomes(preds, golds)
    kinds = np.c_[correct, answered & ~correct, ~answered]  # (n, 3): correct, wrong, unanswered
    units = units or Units.instances(len(correct))
    rows = []
    for metric in metrics:
        if not kinds[:, 2].any():
            lo, hi = accuracy_interval(correct, units=units, seed=seed)
        elif units.is_instance:
            lo, hi = categorical_interval(kinds.sum(0), _STATISTICS[metric], seed=seed)
        else:
            lo, hi = grouped_interval(units.sums(kinds), _STATISTICS[metric], seed=seed)
        rows.append(
            {
                "dataset": dataset,
                "layer": layer,
                "metric": metric,
                "value": round(sc[metric], 2),
                "n": sc["n"],
                "lo": lo,
                "hi": hi,
                **units.row_fields(),
            }
        )
    return rows


def evaluate(
    preds: Sequence[str | None],
    golds: Sequence[Sequence[str]],
    poses: Sequence[str],
    splits: Mapping[str, Sequence[int]],
    layer: str,
    *,
    by_pos: str | None,
    seed: int = 0,
    extra: dict | None = None,
    ids: Sequence[str] | None = None,
    words: Sequence[str] | None = None,
    by_word: str | None = None,
) -> list[dict]:
    """Rows for one layer spec: F1/P/R of every split (name -> instance indices, in order), then F1 per
    universal POS on the split ``by_pos`` (``"<split>:NOUN"`` …), then F1 per target word (``words``, one
    per instance) on the split ``by_word`` (``"<split>:word=bank"`` …, in sorted order). Outcomes and
    units kept in ``extra`` for the splits only. ``ids``: the instance ids, whose shape gives the
    resampling unit (none: independent instances)."""
    units = wsd_units(ids) if ids is not None and len(ids) == len(preds) else Units.instances(len(preds))
    rows = []
    for name, idx in splits.items():
        if not len(idx):
            continue
        p, g = [preds[i] for i in idx], [golds[i] for i in idx]
        rows += split_rows(name, layer, p, g, seed=seed, units=units.take(idx))
        if extra is not None:
            keep_instances(extra, name, layer, outcomes(p, g)[0], units.take(idx))
    breakdowns = [(by_pos, "", poses, UPOS)]
    if words is not None:
        breakdowns.append((by_word, "word=", words, sorted(set(words))))
    for split, prefix, category, order in breakdowns:
        if split is None:
            continue
        members: dict[str, list[int]] = {}
        for i in splits[split]:
            members.setdefault(category[i], []).append(i)
        for c in order:
            idx = members.get(c)
            if idx:
                rows += split_rows(
                    f"{split}:{prefix}{c}",
                    layer,
                    [preds[i] for i in idx],
                    [golds[i] for i in idx],
                    metrics=("F1",),
                    seed=seed,
                    units=units.take(idx),
                )
    return rows
