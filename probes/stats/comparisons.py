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

The paired test resamples and flips the test set's unit (``probes.stats.units``: documents, sentences)
that the results kept beside their outcomes; results saved before units existed are compared instance
by instance, which their ``unit`` column says. Sides measured with several seeds (``--seeds N``, every seed's
outcomes kept) are compared by ``paired_seed_test``: the interval resamples seeds and clusters, ``seeds`` says
how many. A family of comparisons (a layer sweep, a table) is
corrected for multiple testing by ``holm`` (Holm 1979: controls the family-wise error rate without
assuming independence); decisions read the adjusted p.

Frames have the columns ``COLUMNS`` (a, b, diff, lo, hi, p, p_se, n, unit, clusters, seeds); the tables and the app
read them. ``p_se`` is p's Monte Carlo standard error (0 for an exact p): a decision it could turn is reported
as ``AT_THRESHOLD`` (``mc_borderline``), not as a yes or a no.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from probes.errors import ProbeInputError
from probes.results import ProbeResult, row_dataset
from probes.stats.intervals import has_instances, instances, paired_seed_test, paired_test, seed_outcomes
from probes.stats.units import Units, units_of


class Outcomes(dict):
    """(model, layer) -> kept per-instance outcomes on one dataset; ``units``: the dataset's resampling units by
    number of instances (a test set measured whole has one)."""

    def __init__(self) -> None:
        super().__init__()
        self.units: dict[int, Units] = {}
        self.by_seed: dict[Side, np.ndarray] = {}  # (seeds, n) for sides measured with several seeds

    def units_for(self, n: int) -> Units | None:
        return self.units.get(n)


COLUMNS = ["a", "b", "diff", "lo", "hi", "p", "p_se", "n", "unit", "clusters", "seeds"]
ALPHA = 0.05  # the family-wise level of every decision
MC_Z = 2.576  # a Monte Carlo p moved this many of its standard errors down and up: a 99 % band
AT_THRESHOLD = "at the threshold"  # a decision that other random draws could turn (``mc_borderline``)
Side = tuple[str, str]  # (model, layer label)
AGAINST = ("previous", "first")


def _rows_on(results: Iterable[ProbeResult], probe: str, dataset: str) -> Iterator[tuple[ProbeResult, str, str]]:
    """(result, the name it kept outcomes under, layer) of every row of ``probe`` on ``dataset`` (a ``--limit``
    run's rows on its own slice only), in ``results``' order."""
    for res in results:
        if res.probe == probe:
            for row in res.rows:
                if row_dataset(res, row) == dataset:
                    yield res, row["dataset"], str(row["layer"])


def outcome_table(results: Iterable[ProbeResult], probe: str, dataset: str) -> Outcomes:
    """(model, layer) -> kept per-instance outcomes on ``dataset`` as rows read back (a ``--limit`` run's:
    ``conll2000-test (limit 60)``, never the full run's); ``results`` oldest first, the newest wins."""
    table = Outcomes()
    for res, kept, layer in _rows_on(results, probe, dataset):
        out = instances(res, kept, layer)
        if out is not None:
            side = (res.model, layer)
            table[side] = out
            seeds = seed_outcomes(res, kept, layer)
            if seeds is not None:
                table.by_seed[side] = seeds
            else:
                table.by_seed.pop(side, None)
            units = units_of(res, kept, len(out))
            if not units.is_instance:
                table.units[len(out)] = units
    return table


def has_outcomes(results: Iterable[ProbeResult], probe: str, dataset: str) -> bool:
    """Whether any row of ``probe`` on ``dataset`` kept per-instance outcomes (what ``outcome_table`` reads),
    without unpacking them."""
    return any(has_instances(res, kept, layer) for res, kept, layer in _rows_on(results, probe, dataset))


def side_label(side: Side) -> str:
    model, layer = side
    return f"{model} L{layer}" if layer.isdigit() else f"{model} {layer}"


def labelled_side(label: str) -> Side:
    """The side a numbered layer's :func:`side_label` names ("minilm L6" -> ("minilm", "6"))."""
    model, layer = label.rsplit(" L", 1)
    return model, layer


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
        units = outcomes.units_for(len(outcomes[a])) if isinstance(outcomes, Outcomes) else None
        by_seed = outcomes.by_seed if isinstance(outcomes, Outcomes) else {}
        if a in by_seed or b in by_seed:  # a one-seed side as a single seed: never one seed of the other side's
            units = units or Units.instances(len(outcomes[a]))
            a_seeds, b_seeds = (by_seed.get(side, np.asarray(outcomes[side])[None]) for side in (a, b))
            test = paired_seed_test(a_seeds, b_seeds, units, seed=seed)
        else:
            test = {**paired_test(outcomes[a], outcomes[b], units=units, seed=seed), "seeds": "1"}
        rows.append({"a": side_label(a), "b": side_label(b), **{k: test[k] for k in COLUMNS[2:]}})
    return pd.DataFrame(rows, columns=COLUMNS)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values of one family of tests (statsmodels' ``multipletests``, method "holm")."""
    p = np.asarray(p_values, dtype=float)
    return multipletests(p, method="holm")[1] if p.size else p


def mc_borderline(p_values: Sequence[float], p_se: Sequence[float], alpha: float = ALPHA) -> np.ndarray:
    """Per test of one family: whether Holm's decision at ``alpha`` rests on Monte Carlo noise — Holm on every p
    moved ``MC_Z`` of its Monte Carlo standard errors down decides it otherwise than on every p moved up. A p from
    9,999 random sign flips or bootstrap draws near ``alpha`` / (its Holm factor) reads "yes" with one seed and
    "no" with another; an exact p (se 0) is never borderline."""
    p, se = np.asarray(p_values, dtype=float), np.asarray(p_se, dtype=float)
    if not p.size:
        return np.zeros(0, dtype=bool)
    low, high = holm(np.clip(p - MC_Z * se, 0.0, 1.0)), holm(np.clip(p + MC_Z * se, 0.0, 1.0))
    return (low < alpha) != (high < alpha)


def holm_decided(p_values: Sequence[float], p_se: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """One family's Holm-adjusted p-values and, per test, whether Monte Carlo error could turn its decision
    (``mc_borderline``): what every table that decides a family of tests reads (claims, the app's layer tests)."""
    if len(p_values) != len(p_se):
        raise ValueError(f"{len(p_values)} p-values but {len(p_se)} Monte Carlo errors: one per test")
    return holm(p_values), mc_borderline(p_values, p_se)


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
