"""Span F1 of BIO (IOB2, IOBES) label sequences, as conlleval scores chunks and named entities.

A chunk is a maximal run B-X I-X … (or S-X, B-X … E-X); a predicted chunk counts when its type and
both ends equal a gold chunk's. seqeval's ``get_entities`` finds the chunks (its default mode is
conlleval's: an I-X after O or another type starts a chunk). F1 = 2·tp / (predicted + gold) over the
whole test set, i.e. seqeval's micro F1; here it is summed from each sentence's (tp, predicted, gold)
so that the interval resamples sentences (``probes.stats.intervals.grouped_interval``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from seqeval.metrics.sequence_labeling import get_entities

from probes.stats.intervals import grouped_interval
from probes.stats.units import SENTENCE

PREFIXES = ("B-", "I-", "E-", "S-")


def bad_bio_label(labels: Sequence[str]) -> str | None:
    """The first label that is neither O nor B-/I-/E-/S- followed by a type, else None."""
    for label in labels:
        if label != "O" and not (label[:2] in PREFIXES and len(label) > 2):
            return label
    return None


def _chunks(labels: Sequence[str]) -> set[tuple]:
    with warnings.catch_warnings():  # a wrong prediction may be any label; not a format problem
        warnings.simplefilter("ignore")
        return set(get_entities(list(labels)))


def sentence_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> np.ndarray:
    """(sentences, 3): each sentence's true-positive, predicted and gold chunk counts."""
    out = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, pred)):
        gs, ps = _chunks(g), _chunks(p)
        out[i] = (len(gs & ps), len(ps), len(gs))
    return out


def _f1(sums: np.ndarray) -> np.ndarray:
    denom = sums[:, 1] + sums[:, 2]
    return np.where(denom > 0, 100.0 * 2 * sums[:, 0] / np.maximum(denom, 1), 0.0)


def span_f1_row(
    dataset: str, layer: str, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], *, seed: int = 0
) -> dict:
    """A result row: metric "F1" (conlleval span F1, percent), n = gold chunks, sentence-bootstrap interval."""
    counts = sentence_counts(gold, pred)
    value = float(_f1(counts.sum(0, keepdims=True))[0])
    lo, hi = grouped_interval(counts, _f1, seed=seed)
    return {
        "dataset": dataset,
        "layer": layer,
        "metric": "F1",
        "value": round(value, 2),
        "n": int(counts[:, 2].sum()),
        "lo": lo,
        "hi": hi,
        "unit": SENTENCE,
        "clusters": len(counts),
    }
