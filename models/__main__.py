"""Command line: ``python -m models list`` and ``python -m models train KIND [options]``.

Each trainer lives in its own module exposing ``main(argv) -> int`` with its own options
(``python -m models train KIND --help``).
"""
from __future__ import annotations

import argparse
import importlib
import sys

TRAINERS = {
    "word2vec": "models.train_static",     # skip-gram
    "cbow": "models.train_static",
    "fasttext": "models.train_static",
    "glove": "models.glove_torch",
    "gpt": "models.train_gpt",
    "elmo": "models.elmo.train_elmo",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every available model: name, family, layers, dim, source, device")
    train = sub.add_parser("train", help="train a model; KIND --help lists its options", add_help=False)
    train.add_argument("kind", choices=sorted(TRAINERS))
    args, rest = parser.parse_known_args(argv)
    if args.command == "list":
        from models.listing import print_model_table

        return print_model_table()
    module = importlib.import_module(TRAINERS[args.kind])
    # The static trainer serves three kinds; it reads the kind from its first argument.
    return module.main([args.kind, *rest] if TRAINERS[args.kind] == "models.train_static" else rest)


if __name__ == "__main__":
    sys.exit(main())
