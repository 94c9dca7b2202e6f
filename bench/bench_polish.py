"""The L-BFGS polish of the linear probe (``probes.estimators.polish``) on small CoNLL-2000 slices: what it changes.

    python bench/bench_polish.py [--models glove-6b-50d,word2vec-sg,minilm,elmo-small] [--sizes 20,100,400,1500]
                                 [--threads 2]

For each model, slice (the first N training and test sentences) and layer: the linear probe under the plateau
schedule with its polish switched off (``polish=False``) and on (the default), each fitted once (seed 0), with its
test accuracy, its wall time (after one untimed fit: torch's first-use costs) and which polish round (if any) the
held-out loss kept. Prints a Markdown table with
the machine, the command and the date. Not a test: docs/statistics.md records its output.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.registry import load_embedder
from probes.estimators.classifier import LinearProbe
from probes.registry import RunContext
from probes.tasks.pos import conll_splits
from probes.tasks.token_labels import extract

LAYERS = {"minilm": [0, 2, 6], "elmo-small": [0, 1], "gpt-small": [0, 2, 4]}  # others: layer 0


def fit(X: np.ndarray, labels, polish: bool) -> tuple[LinearProbe, float]:
    t0 = time.perf_counter()
    probe = LinearProbe(seed=0, device="cpu", polish=polish).fit(X, labels)
    return probe, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="glove-6b-50d,word2vec-sg,minilm,elmo-small")
    parser.add_argument("--sizes", default="20,100,400,1500")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ctx = RunContext(show_progress=False)
    rng = np.random.default_rng(0)
    fit(rng.standard_normal((600, 50)).astype(np.float32), rng.integers(0, 5, 600), True)  # untimed: first-use costs
    lines = [
        "| model | layer | sentences | training words | plateau (%) | s | + polish (%) | s | kept round |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in args.models.split(","):
        embedder, layers = load_embedder(name), LAYERS.get(name, [0])
        for n in map(int, args.sizes.split(",")):
            train, test = conll_splits(n)
            train_feats, test_feats = (
                extract(embedder, train, layers, ctx, 0, 1),
                extract(embedder, test, layers, ctx, 0, 1),
            )
            for layer in layers:
                Xtr, Xte = (np.asarray(f.layer(layer), np.float32) for f in (train_feats, test_feats))
                plain, t_plain = fit(Xtr, train.labels, False)
                polished, t_polished = fit(Xtr, train.labels, True)
                kept = next((e.get("polish") for e in polished.history_ if e.get("kept")), None) or "—"
                a, b = (100 * p.score(Xte, test.labels) for p in (plain, polished))
                lines.append(
                    f"| {name} | {layer} | {n:,} | {len(Xtr):,} | {a:.2f} | {t_plain:.1f} | {b:.2f} | {t_polished:.1f} "
                    f"| {kept} |"
                )
                print(lines[-1], file=sys.stderr, flush=True)  # progress; the table follows on stdout
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = shlex.join(["python", f"bench/{os.path.basename(__file__)}", *sys.argv[1:]])
    print(f"\n`{command}` — {when}, {platform.machine()}, {os.cpu_count()} cores, {args.threads} torch threads\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
