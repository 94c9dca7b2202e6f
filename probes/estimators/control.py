"""Control tasks and selectivity (Hewitt & Liang 2019, "Designing and Interpreting Probes with Control Tasks").

A control task keeps a tagging task's inputs and output space but makes the labels a function of the
word *type* alone: each type v gets a fixed label C(v) drawn from the task's empirical label
distribution (over training tokens). A probe can solve it only by memorising word identity, so

    selectivity = task accuracy − control accuracy      (points, same probe, same layer)

says how much of the task accuracy the representation, not the probe's memory, explains. A
probe of random vectors has selectivity ≈ 0; ELMo's first layer has a high one for a linear probe.

C(v) is drawn by inverse-CDF sampling from a uniform number that is a keyed hash of (seed, v)
(BLAKE2b, 64 bits), so the label of a type depends on nothing else: not on the order of the
corpus, the slice, or which other types occur; train and test words share it; a type unseen in
training gets one too. Types are case-sensitive, as the task's words are.

    control = ControlTask(seed=0).fit(train_tags)
    control.labels(train_words)      # the control labels of the training tokens
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from probes.progress import ProgressFn
from probes.stats.intervals import accuracy_row, paired_test
from probes.stats.units import Units

_SCALE = float(2**64)


def type_uniforms(words: Sequence[str], seed: int = 0) -> np.ndarray:
    """(n,) numbers in [0, 1), one per word, equal for equal words, independent across types."""
    types, inverse = np.unique(np.asarray(words, dtype=object).astype(str), return_inverse=True)
    key = str(int(seed)).encode()
    u = (
        np.array(
            [
                int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8, key=key).digest(), "little")
                for t in types
            ],
            dtype=np.float64,
        )
        / _SCALE
    )
    return u[inverse]


class ControlTask:
    """Each word type's fixed random label, drawn from the label distribution of ``fit``'s labels."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.classes_: np.ndarray | None = None
        self.probs_: np.ndarray | None = None

    def fit(self, labels: Sequence) -> ControlTask:
        labels = np.asarray(labels)
        if len(labels) == 0:
            raise ValueError("Cannot build a control task from zero labels.")
        self.classes_, counts = np.unique(labels, return_counts=True)
        self.probs_ = counts / counts.sum()
        return self

    def labels(self, words: Sequence[str]) -> np.ndarray:
        """The control label of every word (a type always gets the same one)."""
        if self.classes_ is None:
            raise RuntimeError("Call fit() before labels().")
        cdf = np.cumsum(self.probs_)
        idx = np.searchsorted(cdf, type_uniforms(words, self.seed), side="right")
        return self.classes_[np.minimum(idx, len(self.classes_) - 1)]


def control_correct(
    make_probe,
    X_train: np.ndarray,
    words_train: Sequence[str],
    y_train: Sequence,
    X_test: np.ndarray,
    words_test: Sequence[str],
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """Per-test-token correctness of a probe (``make_probe()``, unfitted) trained on the control task;
    ``progress`` is told the fit's epochs (``LinearProbe.fit``)."""
    control = ControlTask(seed).fit(y_train)
    probe = make_probe().fit(X_train, control.labels(words_train), progress=progress)
    return probe.predict(X_test) == control.labels(words_test)


def selectivity_rows(
    dataset: str,
    layer: str,
    task_correct: np.ndarray,
    ctrl_correct: np.ndarray,
    *,
    seed: int = 0,
    units: Units | None = None,
) -> list[dict]:
    """Rows ``control_accuracy`` and ``selectivity`` (task − control, points, paired-bootstrap interval over
    ``units``)."""
    ctrl = accuracy_row(
        dataset, layer, np.asarray(ctrl_correct, bool), metric="control_accuracy", seed=seed, units=units
    )
    test = paired_test(np.asarray(task_correct, bool), np.asarray(ctrl_correct, bool), seed=seed, units=units)
    task_value = round(100 * float(np.mean(task_correct)), 2)
    sel = {
        "dataset": dataset,
        "layer": layer,
        "metric": "selectivity",
        "value": round(task_value - ctrl["value"], 2),
        "n": int(len(ctrl_correct)),
        "lo": test["lo"],
        "hi": test["hi"],
        "unit": test["unit"],
        "clusters": test["clusters"],
    }
    return [ctrl, sel]
