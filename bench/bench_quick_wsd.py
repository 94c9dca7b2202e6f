"""Which SemCor slice lets the app's quick WSD run tell layers apart — issue 30's bug 6.

    nice -n 5 python bench/bench_quick_wsd.py [--model minilm] [--semcor 20,500,2000,5000] [--limit 20] [--out FILE]

The quick run scores the first ``--limit`` sentences of each evaluation set. Trained on SemCor cut to the same
20 sentences, almost no test word has a sense seen in training, every layer answers WordNet's first sense and
scores the same F1. Per SemCor slice this prints, for every test slice: wall time (first run of a slice pays its
extraction; the feature cache keeps it), how many evaluated instances fell back to the first sense, the
first-sense baseline and F1 on ALL per layer — the evidence behind ``probes.tasks.wsd.probe.QUICK_SEMCOR``.
Not a test.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import cpu_name
from corpora.errors import run_command


def all_f1(result) -> dict[str, float]:
    return {str(r["layer"]): r["value"] for r in result.rows if r["dataset"] == "ALL" and r["metric"] == "F1"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="minilm")
    p.add_argument("--semcor", default="20,500,2000,5000", help="SemCor slices (sentences), comma-separated")
    p.add_argument("--limit", default="20", help="test slices (sentences per evaluation set), comma-separated")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None, help="also write the Markdown section here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    from models.registry import load_embedder
    from probes.run import run_probe

    emb = load_embedder(args.model)
    lines = []
    for semcor in (int(x) for x in args.semcor.split(",")):
        for limit in (int(x) for x in args.limit.split(",")):
            t = time.perf_counter()
            run = run_probe(
                "wsd",
                emb,
                limit=limit,
                options={"semcor_limit": semcor},
                show_progress=False,
                results_dir=tempfile.mkdtemp(),
            )
            wall = time.perf_counter() - t
            ex, f1 = run.result.extra, all_f1(run.result)
            mfs = next(v for b in run.baselines if b.model == "wordnet-1st-sense" for v in all_f1(b).values())
            fell_back = ex["eval_instances"] - ex["instances_with_seen_sense"]
            layers = [k for k in f1 if k.isdigit()]
            lines.append(
                f"| {semcor} | {limit} | {wall:.0f} | {fell_back} of {ex['eval_instances']} | {mfs:.2f} | "
                + " / ".join(f"{f1[k]:.1f}" for k in layers)
                + f" | {max(f1[k] for k in layers) - min(f1[k] for k in layers):.1f} |"
            )
            print(lines[-1], flush=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            f"`python bench/bench_quick_wsd.py {shlex.join(sys.argv[1:])}` — {when}; {cpu_name()}, "
            f"{args.threads} torch threads, {args.model}.",
            "",
            "| SemCor sentences | test sentences per set | wall (s) | fell back to 1st sense | 1st-sense F1 | "
            "F1 on ALL per layer | spread (points) |",
            "|---|---|---|---|---|---|---|",
            *lines,
        ]
    )
    print("\n" + text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
