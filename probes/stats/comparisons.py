"""Layer-vs-layer and model-vs-model differences of saved results, each with a paired test.

Two scores measured on the same test instances differ by less than their two intervals suggest
(the instances are shared), and by more than noise only if the *paired* test says so. Every
comparison here reads the per-instance outcomes a result kept (``probes.stats.intervals.keep_instances``)
and runs ``probes.stats.intervals.paired_test``: the difference A − B in points, its paired-bootstrap 95%
interval and the exact McNemar p-value. A pair measured on different instances (another slice, n
differs) is never compared.

    outcomes = outcome_table(read_results(dir), probe="pos", dataset="conll2000-test")
    layer_comparisons(outcomes, "minilm", against="previous")    # 1 vs 0, 2 vs 1, …
    compare(outcomes, [(("minilm", "6"), ("elmo-small", "2"))])  # any pairs

Frames have the columns ``COLUMNS`` (a, b, diff, lo, hi, p, n); the tables and the app read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from probes.errors import ProbeInputError
from probes.results import ProbeResult
from probes.stats.intervals import instances, paired_test

COLUMNS = ["a", "b", "diff", "lo", "hi", "p", "n"]
Side = tuple[str, str]  # (model, layer label)
AGAINST = ("previous", "first")


def outcome_table(results: Iterable[ProbeResult], probe: str, dataset: str) -> dict[Side, np.ndarray]:
    """(model, layer) -> kept per-instance outcomes on ``dataset``; ``results`` oldest first, the newest wins."""
    table: dict[Side, np.ndarray] = {}
    for res in results:
        if res.probe != probe:
            continue
        for row in res.rows:
            if row["dataset"] == dataset:
                out = instances(res, dataset, str(row["layer"]))
                if out is not None:
                    table[(res.model, str(row["layer"]))] = out
    return table


def side_label(side: Side) -> str:
    model, layer = side
    return f"{model} L{layer}" if layer.isdigit() else f"{model} {layer}"


def compare(outcomes: dict[Side, np.ndarray], pairs: Sequence[tuple[Side, Side]], *, seed: int = 0) -> pd.DataFrame:
    """One row per pair (A, B): A − B in points with its paired interval and p-value.

    ProbeInputError when a side has no kept outcomes or the two were measured on different instances.
    """
    rows = []
    for a, b in pairs:
        for side in (a, b):
            if side not in outcomes:
                raise ProbeInputError(
                    f"No per-instance outcomes for {side_label(side)}: re-run it "
                    "(results written before intervals existed keep none)."
                )
        if len(outcomes[a]) != len(outcomes[b]):
            raise ProbeInputError(
                f"{side_label(a)} ({len(outcomes[a])} instances) and {side_label(b)} "
                f"({len(outcomes[b])}) were measured on different data; compare runs on the same slice."
            )
        test = paired_test(outcomes[a], outcomes[b], seed=seed)
        rows.append({"a": side_label(a), "b": side_label(b), **{k: test[k] for k in ("diff", "lo", "hi", "p", "n")}})
    return pd.DataFrame(rows, columns=COLUMNS)


def numbered_layers(outcomes: dict[Side, np.ndarray], model: str) -> list[str]:
    """The model's numbered layers with kept outcomes, in order."""
    return sorted((layer for m, layer in outcomes if m == model and layer.isdigit()), key=int)


def layer_comparisons(
    outcomes: dict[Side, np.ndarray], model: str, against: str = "previous", *, seed: int = 0
) -> pd.DataFrame:
    """Each numbered layer against the one before it ("previous") or against layer 0 / the first kept ("first")."""
    if against not in AGAINST:
        raise ProbeInputError(f"against={against!r}: choose {' or '.join(AGAINST)}.")
    layers = numbered_layers(outcomes, model)
    pairs = [
        ((model, layers[i]), (model, layers[i - 1] if against == "previous" else layers[0]))
        for i in range(1, len(layers))
    ]
    return compare(outcomes, pairs, seed=seed)


def model_comparisons(
    outcomes: dict[Side, np.ndarray], models: Sequence[str], layer: str = "best", *, seed: int = 0
) -> pd.DataFrame:
    """Every pair of ``models`` at one layer label, or each at its best numbered layer ("best")."""

    def pick(model: str) -> Side | None:
        if layer != "best":
            return (model, layer) if (model, layer) in outcomes else None
        layers = numbered_layers(outcomes, model)
        return (model, max(layers, key=lambda layer: outcomes[(model, layer)].mean())) if layers else None

    sides = [s for s in (pick(m) for m in models) if s is not None]
    pairs = [
        (sides[i], sides[j])
        for i in range(len(sides))
        for j in range(i + 1, len(sides))
        if len(outcomes[sides[i]]) == len(outcomes[sides[j]])
    ]
    return compare(outcomes, pairs, seed=seed)
