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

One draw of C is one sample of a random task: Hewitt & Liang's selectivity moves with it (SD ≈ 0.5 points on
CoNLL-2000, the size of the interval's half-width). So ``control_correct`` trains K draws (seeds
``seed … seed+K-1``; the probe's own seed fixed, so only the labels differ), the control accuracy is their mean,
and the interval of control accuracy and selectivity is a two-way bootstrap over draws and the test set's
clusters (``probes.stats.intervals.seed_cluster_interval`` / ``paired_seed_test``): label-draw and sample
variance together. K = 1 is the single-draw result, to the digit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from probes.progress import ProgressFn, scaled
from probes.stats.intervals import RESAMPLES, accuracy_row, paired_seed_test, paired_test, seed_cluster_interval
from probes.stats.units import Units

_SCALE = float(2**64)
DRAWS = 5  # control-task label draws averaged by default (issue 26: one draw's SD ≈ the interval's half-width)


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
    draws: int = 1,
) -> np.ndarray:
    """(draws, n_test) correctness of a probe (``make_probe()``, unfitted) trained on each of ``draws`` control
    tasks (label seeds ``seed … seed+draws-1``); ``progress`` is told the fits' epochs (``LinearProbe.fit``)."""
    out = np.empty((draws, len(words_test)), dtype=bool)
    for k in range(draws):
        control = ControlTask(seed + k).fit(y_train)
        told = scaled(progress, k / draws, (k + 1) / draws, f"draw {k + 1}/{draws}: " if draws > 1 else "")
        probe = make_probe().fit(X_train, control.labels(words_train), progress=told)
        out[k] = probe.predict(X_test) == control.labels(words_test)
    return out


def selectivity_rows(
    dataset: str,
    layer: str,
    task_correct: np.ndarray,
    ctrl_correct: np.ndarray,
    *,
    seed: int = 0,
    units: Units | None = None,
) -> list[dict]:
    """Rows ``control_accuracy`` (mean over the draws of ``ctrl_correct`` (draws, n)) and ``selectivity`` (task −
    control, points), each with its interval over ``units`` (and over the draws when there are several)."""
    task = np.asarray(task_correct, bool)
    ctrl = np.atleast_2d(np.asarray(ctrl_correct, bool))
    units = units or Units.instances(task.size)
    if len(ctrl) == 1:  # one draw: the paired bootstrap / sign-flip of the single-draw rows
        ctrl_row = accuracy_row(dataset, layer, ctrl[0], metric="control_accuracy", seed=seed, units=units)
        test = paired_test(task, ctrl[0], seed=seed, units=units)
    else:
        lo, hi = seed_cluster_interval(ctrl, units, seed=seed)
        value = round(100 * float(ctrl.mean()), 2)
        ctrl_row = {"dataset": dataset, "layer": layer, "metric": "control_accuracy", "value": value}
        ctrl_row |= {"n": int(task.size), "lo": lo, "hi": hi, **units.row_fields()}
        test = paired_seed_test(task[None], ctrl, units, seed=seed, resamples=RESAMPLES)  # its interval only
    sel = {
        "dataset": dataset,
        "layer": layer,
        "metric": "selectivity",
        "value": round(round(100 * float(task.mean()), 2) - ctrl_row["value"], 2),
        "n": int(task.size),
        "lo": test["lo"],
        "hi": test["hi"],
        "unit": test["unit"],
        "clusters": test["clusters"],
    }
    return [{**row, "draws": len(ctrl)} for row in (ctrl_row, sel)]
