"""The majority-label-per-word baseline of every token and span probe (no embedding at all).

Each word (or span text) gets the label it has most often in training; an unseen one gets the most
frequent label overall. Ties go to the label more frequent overall, then alphabetically, so the
baseline is deterministic. It is the floor a probe has to beat: a probe that only recognises word
identity scores about this much (Hewitt & Liang 2019 make the same point with control tasks).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np


class MajorityLabelBaseline:
    """Each word's most frequent training label; unseen words get the overall most frequent label."""

    def fit(self, words: Sequence[str], labels: Sequence[str]) -> MajorityLabelBaseline:
        if len(words) == 0:
            raise ValueError("Cannot fit on zero tokens.")
        overall = Counter(labels)
        per_word: dict[str, Counter] = defaultdict(Counter)
        for w, t in zip(words, labels):
            per_word[w][t] += 1
        rank = {t: (-c, t) for t, c in overall.items()}
        self.default_ = min(overall, key=lambda t: rank[t])
        self.table_ = {w: min(c, key=lambda t: (-c[t], rank[t])) for w, c in per_word.items()}
        return self

    def predict(self, words: Sequence[str]) -> np.ndarray:
        return np.array([self.table_.get(w, self.default_) for w in words])

    def score(self, words: Sequence[str], labels: Sequence[str]) -> float:
        labels = np.asarray(labels)
        if len(labels) == 0:
            raise ValueError("Cannot score on zero tokens.")
        return float((self.predict(words) == labels).mean())
