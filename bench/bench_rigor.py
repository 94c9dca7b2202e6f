"""Cost of the rigor checks on a token probe: intervals + paired tests, control task, MDL.

    nice -n 5 python bench/bench_rigor.py [--model minilm] [--limit N] [--threads 2] [--out FILE]

On CoNLL-2000 (all of it by default) with the model's cached features (extracted once, timed apart):

1. the plain linear POS probe per layer (``token_task.fit_and_score``), then what the intervals add:
   ``accuracy_row`` + ``keep_instances`` per layer and a paired test of every layer against the one
   before (``probes.stats.comparisons``), on the test set's sentences as the resampling unit — as a share of
   the probe's time (issue 26's bound: ≤ 5 %);
2. the control task per layer (``probes.estimators.control``: a second probe on control labels, plus the
   selectivity rows);
3. MDL per layer (``probes.estimators.mdl``: the online code of the task and of its control task, 10 probes each).

Prints a Markdown section (the machine, the command, the date) and writes it to ``--out``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import cpu_name
from corpora.errors import run_command
from models.base import check_device


def bench_rigor(model: str = "minilm", limit: int | None = None, device: str = "cpu", rigor: bool = True) -> dict:
    from models.registry import load_embedder
    from probes.layers import as_layer_specs
    from probes.registry import RunContext
    from probes.stats.comparisons import Outcomes, compare
    from probes.stats.intervals import accuracy_row, keep_instances
    from probes.tasks.pos import conll_splits
    from probes.tasks.rigor_options import RigorOptions, layer_rows
    from probes.tasks.token_labels import extract, fit_and_score, layer_matrix

    emb = load_embedder(model)
    ctx = RunContext(limit=limit, device=device, show_progress=True)
    train, test = conll_splits(limit)
    specs = as_layer_specs(
        ",".join(map(str, emb.info.layer_ids or range(emb.num_layers))), emb.num_layers, emb.info.layer_ids
    )
    t = time.perf_counter()
    ftr = extract(emb, train, list(range(emb.num_layers)), ctx, 0, 1)
    fte = extract(emb, test, list(range(emb.num_layers)), ctx, 0, 1)
    out = {
        "model": model,
        "layers": len(specs),
        "train_tokens": len(train.labels),
        "test_tokens": len(test.labels),
        "features_s": time.perf_counter() - t,
        "probe_s": 0.0,
        "intervals_s": 0.0,
        "control_s": 0.0,
        "mdl_s": 0.0,
        "per_layer": [],
    }
    offsets = train.offsets
    outcomes, extra = Outcomes(), {}
    for spec in specs:
        Xtr, Xte = layer_matrix(ftr, spec, emb.num_layers), layer_matrix(fte, spec, emb.num_layers)
        t = time.perf_counter()
        fit = fit_and_score(Xtr, train.labels, Xte, test.labels, seed=0, device=device)
        probe_s = time.perf_counter() - t
        t = time.perf_counter()
        units = test.units  # sentences: what the interval and the paired test resample
        accuracy_row(test.name, spec.label, fit.correct, units=units)
        keep_instances(extra, test.name, spec.label, fit.correct, units)
        outcomes[(model, spec.label)] = fit.correct
        outcomes.units[fit.correct.size] = units
        if len(outcomes) > 1:
            prev = specs[len(outcomes) - 2].label
            compare(outcomes, [((model, spec.label), (model, prev))])
        intervals_s = time.perf_counter() - t
        layer = {
            "layer": spec.label,
            "accuracy": round(100 * fit.correct.mean(), 2),
            "probe_s": probe_s,
            "intervals_s": intervals_s,
        }
        for kind, opts in (("control", RigorOptions(control=True)), ("mdl", RigorOptions(mdl=True))) if rigor else ():
            t = time.perf_counter()
            rows, _ = layer_rows(
                opts,
                spec.label,
                Xtr,
                train.labels,
                train.words,
                offsets,
                train.name,
                Xte,
                test.words,
                fit.correct,
                [(test.name, slice(0, len(test.labels)), test.units)],
                seed=0,
                device=device,
                show_progress=True,
            )
            layer[f"{kind}_s"] = time.perf_counter() - t
            layer.update({r["metric"]: r["value"] for r in rows})
        for key in ("probe_s", "intervals_s", "control_s", "mdl_s"):
            out[key] += layer.get(key, 0.0)
        out["per_layer"].append(layer)
        out["outcomes"] = outcomes
        print(
            f"  layer {spec.label}: "
            + ", ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in layer.items() if k != "layer"
            ),
            flush=True,
        )
    return out


def section(res: dict, command: str, threads: int) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    share = 100 * res["intervals_s"] / res["probe_s"]
    lines = [
        "## Rigor checks: intervals, control task, MDL (issues 15, 26)",
        "",
        f"`{command}` — {when}; {cpu_name()}, {os.cpu_count()} cores, no GPU, torch {threads} threads, "
        "machine shared with other jobs (times are upper bounds). "
        f"{res['model']}, {res['layers']} layers, CoNLL-2000: {res['train_tokens']:,} training / "
        f"{res['test_tokens']:,} test tokens; features from the cache (extraction {res['features_s']:.0f} s, apart).",
        "",
        "| step | total (s) | per layer (s) |",
        "|---|---|---|",
    ]
    n = res["layers"]
    for key, label in (
        ("probe_s", "linear POS probe (fit + predict)"),
        ("intervals_s", "intervals + kept outcomes + paired test vs previous layer"),
        ("control_s", "control task (second probe, selectivity rows)"),
        ("mdl_s", "MDL online code, task + control (3 data orders × 2 × 10 probes)"),
    ):
        if res[key] or key in ("probe_s", "intervals_s"):
            lines.append(f"| {label} | {res[key]:.1f} | {res[key] / n:.1f} |")
    lines += [
        "",
        f"Intervals and paired tests add **{share:.2f} %** to the probe's time (bound: ≤ 5 %).",
        "",
        "| layer | accuracy | control acc. | selectivity | codelength (kbits) | compression | "
        "control codelength | control compression |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["per_layer"]:
        lines.append(
            f"| {r['layer']} | {r['accuracy']:.2f} | {r.get('control_accuracy', 'n/a')} | "
            f"{r.get('selectivity', 'n/a')} | {r.get('codelength_kbits', 'n/a')} | {r.get('compression', 'n/a')} | "
            f"{r.get('control_codelength_kbits', 'n/a')} | {r.get('control_compression', 'n/a')} |"
        )
    outcomes = res.get("outcomes", {})
    layers = [r["layer"] for r in res["per_layer"]]
    if len(layers) >= 3:
        from probes.stats.comparisons import compare

        ranked = sorted(layers, key=lambda layer: -outcomes[(res["model"], layer)].mean())
        pairs = [
            ((res["model"], layers[1]), (res["model"], layers[-1])),
            ((res["model"], ranked[0]), (res["model"], ranked[1])),
        ]
        t = compare(outcomes, pairs)
        lines += [
            "",
            "Paired tests on the same test tokens, resampling and sign-flipping whole sentences "
            "(the paper's POS claim is first layer > top):",
            "",
            "| A | B | A − B | 95% interval | p |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {r.a} | {r.b} | {r.diff:.2f} | [{r.lo:.2f}, {r.hi:.2f}] | {r.p:.2g} |" for r in t.itertuples()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="minilm")
    p.add_argument("--limit", type=int, default=None, help="first N sentences of each split (default all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default=None, help="also write the Markdown section here")
    p.add_argument("--no-rigor", action="store_true", help="time the probe and its intervals only (no control, MDL)")
    args = p.parse_args(argv)
    check_device(args.device)  # a missing GPU is one error line before any model loads
    torch.set_num_threads(args.threads)
    np.random.seed(0)
    res = bench_rigor(args.model, args.limit, args.device, rigor=not args.no_rigor)
    text = section(
        res, "python bench/bench_rigor.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])), args.threads
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
