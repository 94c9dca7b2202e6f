"""``python -m features``: fill the feature cache ahead of its use, so no page waits for it (issue 30).

    python -m features index                                  # the corpus index of minilm (models.DEFAULT_MODEL)
    python -m features index --model minilm --model gpt-small # or --model minilm,gpt-small
    python -m features index --model minilm --limit 200       # the first 200 SemCor sentences (a quick try)
    python -m features index --model minilm --layers 6        # at least layer 6 (the others if the disk holds them)
    make index                                                # the default contextual models

``index`` embeds the WSD probe's SemCor training split (``probes.tasks.wsd.sources.builtin_train``: every
sense-tagged token, the entry "semcor-tagged") once per model, every layer: what the app's corpus search
(Polysemy, Embedding space) and the WSD probe read. A model whose index is built and valid is skipped.
Where the disk cannot hold every layer, ``--layers`` names those that must be stored (the app asks for
the layer on its slider): only they are written, said in a warning; without it too little disk is an error.
The build goes through ``features.background.build_entry``: one builder per entry (a second one, from
the app or another terminal, waits for the first and reuses its work), its progress in the cache for
the app to show. On a terminal a bar shows the fraction, the time spent and the time left; otherwise a
line every ``EVERY_S`` seconds. Ends with the time taken and the rate. A bad request (unknown model,
missing data, unusable cache) is one ``error:`` line and exit status 2.

An entry point: it may import the probes layer (the split) though ``features`` sits below it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from corpora.cli_help import state_defaults
from corpora.errors import LabError, RequestError, run_command
from features.background import APP_BUILD_NICE, BuildStatus, build_entry, duration, time_left
from features.entries import has_layers
from models import DEFAULT_MODEL
from models.base import use_compute
from models.references import split_references
from probes.progress import TerminalProgress
from probes.run import load_model
from probes.tasks.wsd.sources import builtin_train

EVERY_S = 15.0  # seconds between progress lines when stderr is not a terminal
BY = "python -m features index"


class Lines:
    """Progress as a line every ``EVERY_S`` seconds (stderr is not a terminal): fraction and time left."""

    def __init__(self, name: str) -> None:
        self.name, self.t0, self.last = name, time.perf_counter(), 0.0

    def __call__(self, fraction: float, message: str) -> None:
        now = time.perf_counter() - self.t0
        if now - self.last >= EVERY_S:
            self.last = now
            left = time_left(now, fraction)
            eta = f", about {duration(left)} left" if left is not None else ""
            print(f"  {self.name}: {fraction:.0%} after {duration(now)}{eta} ({message})", file=sys.stderr, flush=True)


def model_names(values: list[str] | None) -> list[str]:
    names = [n for v in values or [DEFAULT_MODEL] for n in split_references(v)]  # elmo:A,B keeps its comma
    if not names:
        raise RequestError("--model is empty: give a model name (python -m models list).")
    return list(dict.fromkeys(names))


def layer_numbers(text: str | None, num_layers: int) -> list[int]:
    """``--layers``: "0,6" (default every layer), each in range."""
    if text is None:
        return list(range(num_layers))
    try:
        layers = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise RequestError(f"--layers {text!r}: give layer numbers separated by commas, e.g. 0,6.") from None
    if not layers or layers[0] < 0 or layers[-1] >= num_layers:
        raise RequestError(f"--layers {text!r}: the model has layers 0..{num_layers - 1}.")
    return layers


def index_one(name: str, args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    split = builtin_train(args.limit)
    emb = load_model(name, args.device)
    key, every = split.feature_key, range(emb.num_layers)
    layers = layer_numbers(args.layers, emb.num_layers)
    if has_layers(emb, key, layers, sentences=split.layout.sentences, keep=split.keep):  # or those of --layers
        print(f"{name}: the corpus index ({key}) is already built.")
        return
    words = sum(len(s) for s in split.layout.sentences)
    print(f"{name}: building the corpus index ({key}): {len(split.layout.sentences):,} sentences, {words:,} words.")

    def busy(status: BuildStatus | None) -> None:
        where = f" ({status.text()})" if status is not None else ""
        print(f"{name}: already being built by another process{where}; waiting for it.", flush=True)

    t_build = time.perf_counter()
    with TerminalProgress(f"{name} index", quiet=args.quiet) as bar:
        progress = bar.callback or (None if args.quiet else Lines(name))
        build_entry(
            emb, key, split.layout.sentences, keep=split.keep, layers=layers, by=BY, on_busy=busy, progress=progress
        )
    if not has_layers(emb, key, layers):
        raise LabError(f"{name}: the index was computed but could not be stored in the feature cache (see above).")
    spent = time.perf_counter() - t_build
    which = "" if has_layers(emb, key, every) else f" (layers {','.join(map(str, layers))} only: see the warning)"
    print(
        f"{name}: built{which} in {duration(time.perf_counter() - t0)} ({duration(spent)} embedding, "
        f"{words / max(spent, 1e-9):,.0f} words/s)."
    )


def cmd_index(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise RequestError(f"--limit {args.limit} selects nothing; use a positive number.")  # as probes' says
    if args.nice:
        os.nice(args.nice)  # the app's background builds: the pages come first
    use_compute(args.threads, args.device)
    for name in model_names(args.model):
        index_one(name, args)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m features", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("index", help="build the corpus index (SemCor's sense-tagged tokens) of some models")
    p.add_argument("--model", action="append", help=f"a model name or reference, repeatable (default {DEFAULT_MODEL})")
    p.add_argument("--limit", type=int, default=None, help="only the first N SemCor sentences")
    p.add_argument("--layers", default=None, help="layers that must be stored, e.g. 0,6 (default: every layer)")
    p.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument(
        "--nice", type=int, default=0, help=f"lower this process's priority by N (the app uses {APP_BUILD_NICE})"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, only the summary lines")
    p.set_defaults(func=cmd_index)
    return state_defaults(parser)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # the entry stays uncommitted: the next build starts it again
    return run_command(lambda: args.func(args), "nothing partial is kept; run the command again to build the index.")


if __name__ == "__main__":
    sys.exit(main())
