"""Several seeds of one probe run (``--seeds N``): the mean of each row, its spread, every seed's value.

A probe that trains (POS/tag, the λ ablation, classifier probes) depends on its seed (initialisation,
held-out split, shuffles). With ``RunContext.seeds = N`` the run is repeated with seeds
``seed, seed+1, …, seed+N-1`` and merged into one result whose rows report

    value = mean over seeds (2 decimals),  std = sample standard deviation (ddof 1),  seeds = N

and, where every seed kept its per-instance outcomes (``probes.stats.intervals``), ``lo``/``hi`` = an
interval that combines seed and sample variance: a two-way bootstrap that resamples the seeds and the
test set's clusters (its ``probes.stats.units``) independently in each of 1,000 draws
(``seed_cluster_interval``); a row without kept outcomes (span F1) gets the envelope of its seeds' intervals.
Every seed's outcomes are kept (``extra["seed_instances"]``) for tests that combine seeds
(``probes.stats.intervals.paired_seed_test``). ``extra["seeds"]`` holds each seed's value per
row; ``extra["total_s"]`` is the whole run's time (every seed's, ``extra["seed_total_s"]``), ``extra["instances"]``
and the rest of ``extra`` are the first seed's (paired tests compare like with like: seed ``seed``).
``seeds = 1`` is the plain run (the numbers before this module, to the digit). A probe whose result
records no ``seed`` in its params (the 1-NN WSD probe) does not depend on one and is run once.
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np

from probes.layers import LayerSpec
from probes.registry import ProbeSpec, RunContext
from probes.results import ProbeResult
from probes.stats.intervals import instances, seed_cluster_interval
from probes.stats.units import units_of

#: Seeds a trained probe runs with when its rows feed the claims table (``reproduce``'s default ``--seeds``): one
#: seed cannot tell a layer difference from the probe's own training noise.
CLAIM_SEEDS = 3


def row_key(row: dict) -> str:
    return f"{row['dataset']}|{row['layer']}|{row['metric']}"


def _interval(runs: list[ProbeResult], row: dict, seed: int) -> tuple[float, float] | None:
    """Seed × cluster bootstrap interval of the seed-averaged accuracy of one accuracy row, when every run kept
    its per-instance outcomes for it (None otherwise)."""
    outs = [instances(r, row["dataset"], row["layer"]) for r in runs]
    if any(o is None for o in outs) or len({len(o) for o in outs}) != 1:
        return None
    return seed_cluster_interval(np.stack(outs), units_of(runs[0], row["dataset"], len(outs[0])), seed=seed)


def _envelope(runs: list[ProbeResult], row: dict) -> tuple[float, float] | None:
    """A metric whose outcomes are not kept per instance (span F1): the envelope of the seeds' intervals, from the
    lowest lower bound to the highest upper bound (conservative)."""
    bounds = [
        (r["lo"], r["hi"]) for run in runs for r in run.rows if row_key(r) == row_key(row) and r.get("lo") is not None
    ]
    return (min(b[0] for b in bounds), max(b[1] for b in bounds)) if len(bounds) == len(runs) else None


def merge_seeds(runs: list[ProbeResult]) -> ProbeResult:
    """One result from the runs of several seeds (first run's rows, order and extra)."""
    first = runs[0]
    per_seed = {row_key(r): [] for r in first.rows}
    for run in runs:
        for r in run.rows:
            if row_key(r) in per_seed and r["value"] is not None:  # a row marked missing (nothing to score): no value
                per_seed[row_key(r)].append(float(r["value"]))
    seed0 = int(first.params.get("seed", 0))
    rows = []
    for row in first.rows:
        values = per_seed[row_key(row)]
        if not values:  # missing in every seed: stays marked missing, as a one-seed run shows it
            rows.append({**row, "value": None, "seeds": 0})
            continue
        merged = {
            **row,
            "value": round(statistics.fmean(values), 2),
            "seeds": len(values),
            "std": round(statistics.stdev(values), 2) if len(values) > 1 else 0.0,
        }
        merged.pop("lo", None), merged.pop("hi", None)
        interval = _interval(runs, row, seed0) if row["metric"] == "accuracy" else _envelope(runs, row)
        if interval is not None:
            merged["lo"], merged["hi"] = interval
        rows.append(merged)
    seeds = [int(r.params.get("seed", 0)) for r in runs]
    times = [r.extra.get("total_s") for r in runs]
    timing = {"total_s": round(sum(times), 1), "seed_total_s": times} if None not in times else {}
    return dataclasses.replace(
        first,
        rows=rows,
        params={**first.params, "seeds": seeds},
        extra={
            **first.extra,
            "seeds": {"seeds": seeds, "values": per_seed},
            "seed_instances": {str(k): r.extra.get("instances", {}) for k, r in zip(seeds, runs)},
            **timing,
            **_cut_short(runs),
        },
    )


def _cut_short(runs: list[ProbeResult]) -> dict:
    """The fits that ran out of epochs in any seed, not the first seed's alone (whose ``extra`` the merge keeps): the
    layers (``extra["epoch_bound_reached"]``, ``token_labels.note_fit``) and, per layer, the control task's label
    draws (``extra["rigor"][layer]["control_epoch_bound_reached"]``, ``rigor_options.layer_rows``)."""
    out: dict = {}
    layers = [layer for r in runs for layer in r.extra.get("epoch_bound_reached", [])]
    if layers:
        out["epoch_bound_reached"] = list(dict.fromkeys(layers))  # in the order the runs met them
    rigor = {layer: dict(details) for layer, details in runs[0].extra.get("rigor", {}).items()}
    for r in runs:
        for layer, details in r.extra.get("rigor", {}).items():
            if draws := details.get("control_epoch_bound_reached"):
                held = rigor.setdefault(layer, {}).get("control_epoch_bound_reached", [])
                rigor[layer]["control_epoch_bound_reached"] = sorted({*held, *draws})
    if rigor != runs[0].extra.get("rigor", {}):
        out["rigor"] = rigor
    return out


def run_with_seeds(
    spec: ProbeSpec, embedder, layers: list[LayerSpec] | None, ctx: RunContext, **options
) -> ProbeResult:
    """``spec.run`` with ``ctx.seeds`` seeds (one plain run when 1), merged by ``merge_seeds``; each seed's
    progress is its share of the whole, its messages after "seed k/N: "."""
    n = ctx.seeds

    def seed_ctx(i: int) -> RunContext:
        told = ctx.sub_progress(i / n, (i + 1) / n, f"seed {i + 1}/{n}: ") if n > 1 else ctx.progress
        return dataclasses.replace(ctx, seed=ctx.seed + i, progress=told)

    first = spec.run(embedder, layers, seed_ctx(0), **options)
    if n <= 1 or "seed" not in first.params:
        return first
    runs = [first] + [spec.run(embedder, layers, seed_ctx(i), **options) for i in range(1, n)]
    return merge_seeds(runs)
