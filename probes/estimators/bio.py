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


def chunk_counts_f1(sums: np.ndarray) -> np.ndarray:
    """(R, 3) summed (true positive, predicted, gold) chunk counts -> (R,) F1 in percent; NaN where there is no
    chunk at all, predicted or gold (F1 is undefined there, and a bootstrap leaves such resamples out: a 0 had
    pulled a sparse entity's interval down to 0)."""
    denom = sums[:, 1] + sums[:, 2]
    return np.where(denom > 0, 100.0 * 2 * sums[:, 0] / np.maximum(denom, 1), np.nan)


def span_f1_row(
    dataset: str, layer: str, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], *, seed: int = 0
) -> dict:
    """A result row: metric "F1" (conlleval span F1, percent), n = gold chunks, sentence-bootstrap interval."""
    counts = sentence_counts(gold, pred)
    value = float(chunk_counts_f1(counts.sum(0, keepdims=True))[0])
    defined = bool(np.isfinite(value))  # no chunk in the test set, gold or predicted: no F1 (n/a), no interval
    lo, hi = grouped_interval(counts, chunk_counts_f1, seed=seed) if defined else (None, None)
    return {
        "dataset": dataset,
        "layer": layer,
        "metric": "F1",
        "value": round(value, 2) if defined else None,
        "n": int(counts[:, 2].sum()),
        "lo": lo,
        "hi": hi,
        "unit": SENTENCE,
        "clusters": len(counts),
    }
