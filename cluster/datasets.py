"""The datasets ``python -m probes extract`` can pre-compute, under the feature-cache keys the probes read.

    sentences, keep, key = dataset_request("conll2000-train", limit=None)

Each name gives exactly what its probe passes to ``get_features`` (key, sentences, stored rows), so an
entry extracted here is the one the probe finds: ``conll2000-train`` / ``conll2000-test`` (POS and
the λ ablation) and ``semcor-tagged`` (the WSD probe's training side, its sense-tagged pieces only).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from probes.errors import ProbeInputError
from probes.tasks.conll import conll_slice, feature_key

Request = tuple[list[list[str]], "np.ndarray | None", str]


def _conll(split: str) -> Callable[[int | None], Request]:
    def build(limit: int | None) -> Request:
        return [list(s.words) for s in conll_slice(split, limit)], None, feature_key(split, limit)

    return build


def _semcor(limit: int | None) -> Request:
    from probes.tasks.wsd.sources import builtin_train  # lazy: torch (the WSD layout); python -m probes stays light

    split = builtin_train(limit)
    return split.layout.sentences, split.keep, split.feature_key


DATASETS: dict[str, Callable[[int | None], Request]] = {
    "conll2000-train": _conll("train"),
    "conll2000-test": _conll("test"),
    "semcor-tagged": _semcor,
}


def dataset_request(name: str, limit: int | None) -> Request:
    """(sentences, keep, feature-cache key) of dataset ``name``; ProbeInputError naming the choices."""
    if name not in DATASETS:
        raise ProbeInputError(f"--dataset {name!r}: choose from {', '.join(DATASETS)}.")
    return DATASETS[name](limit)
