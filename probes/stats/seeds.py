"""Several seeds of one probe run (``--seeds N``): the mean of each row, its spread, every seed's value.

A probe that trains (POS/tag, the λ ablation, classifier probes) depends on its seed (initialisation,
held-out split, shuffles). With ``RunContext.seeds = N`` the run is repeated with seeds
``seed, seed+1, …, seed+N-1`` and merged into one result whose rows report

    value = mean over seeds (2 decimals),  std = sample standard deviation (ddof 1),  seeds = N

and, where every seed kept its per-instance outcomes (``probes.stats.intervals``), ``lo``/``hi`` = the
bootstrap interval of the seed-averaged per-instance outcomes (``grouped_interval`` over instances);
otherwise no interval. ``extra["seeds"]`` holds each seed's value per row; ``extra["instances"]`` and
the rest of ``extra`` are the first seed's (paired tests compare like with like: seed ``seed``).
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
from probes.stats.intervals import grouped_interval, instances


def row_key(row: dict) -> str:
    return f"{row['dataset']}|{row['layer']}|{row['metric']}"


def _interval(runs: list[ProbeResult], row: dict, seed: int) -> tuple[float, float] | None:
    """Bootstrap interval of the seed-averaged accuracy of one accuracy row, when every run kept its
    per-instance outcomes for it (None otherwise)."""
    outs = [instances(r, row["dataset"], row["layer"]) for r in runs]
    if any(o is None for o in outs) or len({len(o) for o in outs}) != 1:
        return None
    mean = np.mean(np.stack(outs), axis=0)[:, None]  # (instances, 1): share of seeds right
    n = len(mean)
    return grouped_interval(mean, lambda sums: 100.0 * sums[:, 0] / n, seed=seed)


def merge_seeds(runs: list[ProbeResult]) -> ProbeResult:
    """One result from the runs of several seeds (first run's rows, order and extra)."""
    first = runs[0]
    per_seed = {row_key(r): [] for r in first.rows}
    for run in runs:
        for r in run.rows:
            if row_key(r) in per_seed:
                per_seed[row_key(r)].append(float(r["value"]))
    seed0 = int(first.params.get("seed", 0))
    rows = []
    for row in first.rows:
        values = per_seed[row_key(row)]
        merged = {
            **row,
            "value": round(statistics.fmean(values), 2),
            "seeds": len(values),
            "std": round(statistics.stdev(values), 2) if len(values) > 1 else 0.0,
        }
        merged.pop("lo", None), merged.pop("hi", None)
        if row["metric"] == "accuracy":
            interval = _interval(runs, row, seed0)
            if interval is not None:
                merged["lo"], merged["hi"] = interval
        rows.append(merged)
    seeds = [int(r.params.get("seed", 0)) for r in runs]
    return dataclasses.replace(
        first,
        rows=rows,
        params={**first.params, "seeds": seeds},
        extra={**first.extra, "seeds": {"seeds": seeds, "values": per_seed}},
    )


def run_with_seeds(
    spec: ProbeSpec, embedder, layers: list[LayerSpec] | None, ctx: RunContext, **options
) -> ProbeResult:
    """``spec.run`` with ``ctx.seeds`` seeds (one plain run when 1), merged by ``merge_seeds``."""
    first = spec.run(embedder, layers, ctx, **options)
    if ctx.seeds <= 1 or "seed" not in first.params:
        return first
    runs = [first] + [
        spec.run(embedder, layers, dataclasses.replace(ctx, seed=ctx.seed + i), **options) for i in range(1, ctx.seeds)
    ]
    return merge_seeds(runs)
