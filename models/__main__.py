"""Command line: ``python -m models list`` and ``python -m models train KIND [options]``.

Each trainer lives in its own module of ``models/train/`` exposing ``main(argv) -> int`` with its
own options (``python -m models train KIND --help``).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from models.listing import print_model_table
from models.train import KIND_IN_ARGV, TRAINERS


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every available model: name, family, layers, dim, source, device, status")
    train = sub.add_parser("train", help="train a model; KIND --help lists its options", add_help=False)
    train.add_argument("kind", choices=sorted(TRAINERS))
    args, rest = parser.parse_known_args(argv)
    if args.command != "train" and rest:
        # Only `train KIND` passes options on (to the trainer); anything else unknown is an error (exit 2).
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "list":
        return print_model_table()
    module_name = TRAINERS[args.kind]
    # Imported here: only the trainer asked for, with its own dependencies (gensim, transformers…).
    module = importlib.import_module(module_name)
    return module.main([args.kind, *rest] if module_name in KIND_IN_ARGV else rest)


if __name__ == "__main__":
    sys.exit(main())
