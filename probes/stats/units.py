"""Resampling units: which independent piece of text each test instance comes from.

A 95% interval or a paired test is only as honest as its unit. Test instances are not independent
when many come from one text: WSD's ALL without SemEval-07 has 6,798 instances from 23 documents, a
POS test set's tokens come in sentences. Resampling instances as if they were independent makes the
interval too narrow (MiniLM WSD layer 6: 2.2 points by instance, 5.3 by document) and the p-value
too small. So every test set names its unit and which unit each instance belongs to:

- ``document`` — the WSD evaluation framework's sets (an instance id ``<set>.d000.s000.t000`` names
  its document) and any WSD XML whose ids have that shape;
- ``sentence`` — token and span tasks (POS, tags, chunks, edge probing), WSD ids of the shape
  ``<sentence>.t000``;
- ``instance`` — only where instances are independent: a lexical sample (one target per sentence).

``Units`` holds the unit's name and one cluster index per instance. The intervals
(``probes.stats.intervals``) resample clusters, the paired tests flip the sign of whole clusters, and
every result row states ``unit`` and ``clusters`` ("95% CI over 23 documents"). A result keeps its test
sets' units in ``extra["units"]`` (run-length coded as text: one number per sentence), beside the
per-instance outcomes, so comparisons made later from saved results use the same unit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

INSTANCE, SENTENCE, DOCUMENT = "instance", "sentence", "document"
FEW_CLUSTERS = 30  # below this a cluster bootstrap interval is approximate (said beside it)
#: Fewer test instances than this make a "small sample" (a --limit slice, a small test set): a chart says so in its
#: title (``ChartSpec.small_n``: a probe whose rows count other units sets its own).
SMALL_N = 1000


@dataclass(frozen=True)
class Units:
    """The resampling unit of a test set and the cluster (0 … clusters−1) of each of its ``n`` instances."""

    name: str
    labels: np.ndarray  # (n,) int64

    @classmethod
    def of(cls, name: str, keys: Sequence) -> Units:
        """Clusters from one hashable key per instance (a document id, a sentence index), numbered in order
        of first appearance."""
        index: dict = {}
        return cls(name, np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64))

    @classmethod
    def instances(cls, n: int) -> Units:
        return cls(INSTANCE, np.arange(n, dtype=np.int64))

    @classmethod
    def from_sizes(cls, name: str, sizes: Sequence[int]) -> Units:
        """Contiguous clusters of the given sizes (e.g. the tokens of each sentence, in order)."""
        return cls(name, np.repeat(np.arange(len(sizes), dtype=np.int64), np.asarray(sizes, dtype=np.int64)))

    def __len__(self) -> int:
        return int(self.labels.size)

    @property
    def clusters(self) -> int:
        return int(np.unique(self.labels).size)

    @property
    def is_instance(self) -> bool:
        return self.name == INSTANCE

    def take(self, idx) -> Units:
        """The units of a subset of the instances (a split, a part of speech), clusters renumbered."""
        return Units.of(self.name, self.labels[np.asarray(idx, dtype=np.int64)].tolist())

    def sums(self, per_instance: np.ndarray) -> np.ndarray:
        """(n, k) per-instance counts -> (clusters, k) per-cluster sums (clusters in label order)."""
        per_instance = np.asarray(per_instance, dtype=np.float64).reshape(len(self), -1)
        _, inverse = np.unique(self.labels, return_inverse=True)
        out = np.zeros((int(inverse.max()) + 1, per_instance.shape[1]))
        np.add.at(out, inverse, per_instance)
        return out

    def describe(self) -> str:
        """ "23 documents" — what the interval resamples (and "(few)" when clusters are few)."""
        return over_text(self.name, self.clusters)

    def row_fields(self) -> dict:
        """What every result row states about its interval."""
        return {"unit": self.name, "clusters": self.clusters}

    def to_json(self) -> dict:
        """Run-length code of the labels as text: {"unit", "n", "lengths": "3 5 …"} and, unless the runs are
        clusters 0, 1, 2, … in order (sentences, documents), "values"."""
        labels = self.labels
        starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]]) if labels.size else np.array([], int)
        lengths, values = np.diff(np.r_[starts, labels.size]), labels[starts]
        data = {"unit": self.name, "n": len(self), "lengths": " ".join(map(str, lengths.tolist()))}
        if not np.array_equal(values, np.arange(values.size)):
            data["values"] = " ".join(map(str, values.tolist()))
        return data

    @classmethod
    def from_json(cls, data: dict) -> Units:
        lengths = np.array(data["lengths"].split(), np.int64)
        values = np.array(data["values"].split(), np.int64) if "values" in data else np.arange(lengths.size)
        labels = np.repeat(values, lengths)
        if labels.size != int(data["n"]):
            raise ValueError(f"Stored units cover {labels.size} instances, not {data['n']}.")
        return cls(str(data["unit"]), labels)


def few_seeds(seeds) -> str:
    """ " (few)" after a count of training seeds below ``FEW_CLUSTERS`` (a two-way bootstrap over 3 seeds can draw
    only 10 seed combinations), "" otherwise: the one rule of the tables' and the charts' seed counts."""
    return " (few)" if int(seeds) < FEW_CLUSTERS else ""


def seeds_text(seeds) -> str:
    """ " and 3 seeds (few)" for a mean over training seeds, whose interval resamples them too (``few_seeds``); ""
    for one seed or none stated."""
    if seeds is None or seeds != seeds or int(seeds) < 2:
        return ""
    return f" and {int(seeds)} seeds{few_seeds(seeds)}"


#: What an interval saved before units were stated (2026-11-26) resamples: the test instances, as if independent
#: (``probes.reporting.restate`` restates it over the test set's own units).
UNSTATED_UNIT = "test instances (saved before units were stated)"


def over_text(unit, clusters, seeds=None, lo=None) -> str:
    """ "23 documents (few: interval approximate)", "2012 sentences", "2012 sentences and 3 seeds (few)" — what a
    row's interval resamples (``seeds``: the training seeds its value averages); for a row that states no unit,
    ``UNSTATED_UNIT`` where it has an interval (``lo``: its lower bound), else "n/a"."""
    if not isinstance(unit, str) and lo is not None and lo == lo:
        return UNSTATED_UNIT
    return over_texts(unit, [clusters], seeds)


def count_span(counts: Iterable) -> str:
    """ "23" or "10–23": the whole numbers among ``counts`` (missing ones left out) as one number or their range;
    "" when there are none. One format for every "how many" of rows that may differ (units, draws, seeds, n)."""
    ks = sorted({int(k) for k in counts if k is not None and k == k})
    if not ks:
        return ""
    return str(ks[0]) if len(ks) == 1 else f"{ks[0]}–{ks[-1]}"


def over_texts(unit, clusters: Iterable, seeds=None) -> str:
    """``over_text`` of rows whose intervals resample different numbers of one unit (WSD per POS on ALL w/o SE07:
    NOUN's 23 documents, VERB's 10): "10–23 documents (few: interval approximate)".
    ``seeds``: the most training seeds a row averages."""
    ks = sorted({int(k) for k in clusters if k is not None and k == k})
    if not ks or not isinstance(unit, str):
        return "n/a"
    text = f"{count_span(ks)} {unit}{'' if ks == [1] else 's'}"
    if ks[0] < 2 and unit != INSTANCE:
        return text + (" (one: no interval)" if len(ks) == 1 else " (one: no interval for some)")
    few = " (few: interval approximate)" if ks[0] < FEW_CLUSTERS and unit != INSTANCE else ""
    return text + few + seeds_text(seeds)


def interval_text(lo, hi, digits: int = 2) -> str:
    """ "[66.27, 71.57]", or "n/a" for a row without an interval."""
    if lo is None or hi is None or lo != lo or hi != hi:
        return "n/a"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def value_interval_text(value, lo, hi, std=None, digits: int = 2) -> str:
    """ "69.06 [66.27, 71.57]": a table cell, the value with its interval (the value alone without one); with
    ``std`` (a mean over seeds: ``probes.stats.seeds``) "69.06 ± 0.41 [66.27, 71.57]"; "—" without a value (a
    layer the model lacks, a score the data cannot define: span F1 without a chunk)."""
    if value is None or value != value:
        return "—"
    interval = interval_text(lo, hi, digits)
    spread = "" if std is None or std != std else f" ± {std:.{digits}f}"
    return f"{value:.{digits}f}{spread}" + ("" if interval == "n/a" else f" {interval}")


def keep_units(extra: dict, dataset: str, units: Units) -> None:
    """Record a test set's units in a result's ``extra`` (once per dataset)."""
    extra.setdefault("units", {})[dataset] = units.to_json()


def units_of(result, dataset: str, n: int) -> Units:
    """The units a result (a ProbeResult or its ``extra``) kept for ``dataset``; instances when none were kept
    (results saved before units existed) or when they do not cover ``n`` instances."""
    extra = result if isinstance(result, dict) else (result.extra or {})
    data = (extra.get("units") or {}).get(dataset)
    units = None if data is None else Units.from_json(data)
    return units if units is not None and len(units) == n else Units.instances(n)


_DOCUMENT_ID = re.compile(r"^(.+)\.s\d+\.t\d+$")  # the framework's <set>.d000.s000.t000 / d000.s000.t000
_SENTENCE_ID = re.compile(r"^(.+)\.t\d+$")


def wsd_units(ids: Sequence[str]) -> Units:
    """Units of WSD instances from their ids: documents when every id reads ``<document>.s<k>.t<k>`` (the
    evaluation framework), sentences when every id reads ``<sentence>.t<k>``, instances otherwise (a lexical
    sample's ids name no text)."""
    for name, pattern in ((DOCUMENT, _DOCUMENT_ID), (SENTENCE, _SENTENCE_ID)):
        matches = [pattern.match(i) for i in ids]
        if ids and all(matches):
            return Units.of(name, [m.group(1) for m in matches])
    return Units.instances(len(ids))
