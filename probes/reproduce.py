"""Reproduce the paper's section 5 on several models: every probe's baselines once, then every
(model, probe), results saved under ``OUT/runs``, tables written to ``OUT`` (``probes.reporting.tables``).

    python -m probes reproduce --models glove-6b-50d,minilm --out docs/results/
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from models.base import Embedder
from probes.layers import parse_layer_specs
from probes.registry import ProbeSpec, RunContext
from probes.results import ProbeResult, save_result
from probes.stats.seeds import run_with_seeds
from probes.reporting.tables import write_tables


def reproduce(embedders: dict[str, Embedder], specs: Sequence[ProbeSpec], ctx: RunContext,
              options: dict[str, dict[str, Any]], out: Path, command: str = "",
              report: Callable[[ProbeResult], None] = lambda res: None,
              say: Callable[[str], None] = print) -> dict[str, float]:
    """Run and save everything; returns wall times in seconds (per step and "total").

    options: probe name -> its runner keywords. ``report`` sees each result before it is saved.
    """
    results_dir = out / "runs"
    timings: dict[str, float] = {}
    t_all = time.perf_counter()

    def save(res: ProbeResult) -> None:
        report(res)
        save_result(res.stamped(command), results_dir)

    for spec in specs:
        t = time.perf_counter()
        for res in spec.baselines(ctx, **options[spec.name]):
            save(res)
        timings[f"{spec.name} baselines"] = time.perf_counter() - t
    for name, emb in embedders.items():
        for spec in specs:
            if emb.num_layers < spec.min_layers:
                say(f"   (skipped {spec.name}: {name} has fewer than {spec.min_layers} layers)")
                continue
            t = time.perf_counter()
            say(f"== {name}: {spec.name}")
            layers = parse_layer_specs("all", emb.num_layers, emb.info.layer_ids) if spec.uses_layers else None
            save(run_with_seeds(spec, emb, layers, ctx, **options[spec.name]))
            timings[f"{name} {spec.name}"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_all
    write_tables(results_dir, out, None, timings=timings, command=command)
    return timings
