"""Time of a full structural-probe run (Hewitt & Manning 2019) from a warm feature cache — issue 28's bound.

    nice -n 5 python bench/bench_structural.py [--model minilm] [--limit N] [--epochs E] [--threads 2] [--out FILE]

UD English EWT train / dev / test (all of it by default), every layer of the model. The run is made twice
through the one run path (``probes.run.run_probe``, nothing saved): the first fills the feature cache (its
time, extraction included, is printed apart), the second is the one timed — what a user pays from a warm
cache (issue 28: ≤ 10 min for MiniLM on the 2-core CPU). Prints a Markdown section (machine, command, date,
wall time, the run's own ``extra`` timings and UUAS per layer) and writes it to ``--out``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import cpu_name
from corpora.errors import run_command
from models.base import check_device
from probes.stats.units import interval_text


def timed_run(model: str, limit: int | None, epochs: int | None, device: str) -> tuple[float, object]:
    from probes.run import run_probe

    options = {} if epochs is None else {"epochs": epochs}
    t = time.perf_counter()
    run = run_probe("structural", model, layers="all", limit=limit, options=options, device=device, show_progress=True)
    return time.perf_counter() - t, run.result


def section(model: str, cold_s: float, warm_s: float, result, command: str, threads: int) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = {(r["dataset"], r["layer"], r["metric"]): r for r in result.rows}
    test = next((d for d, _, _ in rows if d.endswith(":test") or "test" in d), None)
    lines = [
        "## Structural probe, full run from a warm cache (issue 28)",
        "",
        f"`{command}` — {when}; {cpu_name()}, {os.cpu_count()} cores, no GPU, torch {threads} threads. "
        f"First run (fills the feature cache, extraction included): {cold_s / 60:.1f} min; "
        f"**second run, warm cache: {warm_s / 60:.1f} min** (bound: ≤ 10 min).",
        "",
        "| layer | UUAS (test) | 95% interval | DSpr. | root acc. |",
        "|---|---|---|---|---|",
    ]
    for (dataset, layer, metric), r in rows.items():
        if dataset == test and metric == "UUAS":
            dspr = rows.get((dataset, layer, "DSpr"), {}).get("value", "n/a")
            root = rows.get((dataset, layer, "root_acc"), {}).get("value", "n/a")
            lines.append(
                f"| {layer} | {r['value']:.1f} | {interval_text(r.get('lo'), r.get('hi'))} | {dspr} | {root} |"
            )
    timings = {k: v for k, v in (result.extra or {}).items() if k.endswith("_s")}
    lines += ["", f"The run's own timings (s): {timings}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="minilm")
    p.add_argument("--limit", type=int, default=None, help="first N sentences of each split (default all)")
    p.add_argument("--epochs", type=int, default=None, help="the probe's epochs (default: the probe's own)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default=None, help="also write the Markdown section here")
    args = p.parse_args(argv)
    check_device(args.device)  # a missing GPU is one error line before any model loads
    torch.set_num_threads(args.threads)
    cold_s, _ = timed_run(args.model, args.limit, args.epochs, args.device)
    warm_s, result = timed_run(args.model, args.limit, args.epochs, args.device)
    text = section(args.model, cold_s, warm_s, result, "python " + shlex.join(sys.argv), args.threads)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
