"""Command line: ``python -m models list | add | remove | train``.

    python -m models add bert-base ./bert-base-uncased --pooling first --layers 0,6,12
    python -m models add roberta hf:FacebookAI/roberta-base --dtype bf16
    python -m models list                # the zoo and your models: family, layers, dim, params, size
    python -m models remove bert-base

Registered models live in ``embprobe.toml`` (or ``$EMBPROBE_MODELS``; see ``models.user_registry``).
Each trainer lives in its own module of ``models/train/`` exposing ``main(argv) -> int`` with its
own options (``python -m models train KIND --help``). A bad model or option: one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from corpora.cli_help import state_defaults
from corpora.errors import run_command
from models.listing import format_table, print_model_table
from models.manage import add_model, remove_model
from models.options import DTYPES, HELP, POOLINGS
from models.train import KIND_IN_ARGV, TRAINERS
from models.user_registry import registry_file


def _add_parser(sub) -> None:
    add = sub.add_parser("add", help="register a model under a name (validated before it is saved)")
    add.add_argument("name", help="the name to use everywhere (--model NAME, the app)")
    add.add_argument("ref", help="checkpoint folder, hf:ORG/NAME[@REV], elmo:OPTIONS,WEIGHTS, or a vectors file")
    add.add_argument("--pooling", choices=POOLINGS, help=HELP["pooling"])
    add.add_argument("--dtype", choices=DTYPES, help=HELP["dtype"])
    for key in ("window", "stride"):
        add.add_argument(f"--{key}", type=int, help=HELP[key])
    for key in ("layers", "revision", "device"):
        add.add_argument(f"--{key}", help=HELP[key])
    for key in ("stateful", "allow_pickle"):
        add.add_argument(f"--{key.replace('_', '-')}", dest=key, action="store_true", default=None, help=HELP[key])
    add.add_argument("--replace", action="store_true", help="replace a model registered under the same name")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m models", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every model: the zoo and yours, with family, layers, dim, params, size, status")
    _add_parser(sub)
    sub.add_parser("remove", help="unregister a model you added").add_argument("name")
    train = sub.add_parser("train", help="train a model; KIND --help lists its options", add_help=False)
    train.add_argument("kind", choices=sorted(TRAINERS))
    if argv[:1] == ["train"] and argv[1:] in (["-h"], ["--help"]):  # no help of its own: KIND --help is the trainer's
        train.print_help()
        print("\nEach KIND's options: python -m models train KIND --help")
        return 0
    args, rest = state_defaults(parser).parse_known_args(argv)
    if args.command != "train" and rest:
        # Only `train KIND` passes options on (to the trainer); anything else unknown is an error (exit 2).
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "train":
        module_name = TRAINERS[args.kind]
        # lazy: only the trainer asked for, with its own heavy dependencies (gensim, transformers…).
        module = importlib.import_module(module_name)
        argv = [args.kind, *rest] if module_name in KIND_IN_ARGV else rest
        return run_command(
            lambda: module.main(argv),
            "no model was written; a trainer with --resume goes on from its last checkpoint in its run folder.",
        )
    return run_command(lambda: _manage(args), "the model registry is as it was (each edit is one atomic write).")


def _manage(args: argparse.Namespace) -> int:
    """list, remove, add: a bad model, option or registry file is one line (``run_command``)."""
    if args.command == "list":
        return print_model_table()
    if args.command == "remove":
        remove_model(args.name)
        print(f"removed {args.name} from {registry_file()}")
        return 0
    options = {k: getattr(args, k) for k in HELP if getattr(args, k) is not None}
    entry, row = add_model(args.name, args.ref, options, replace=args.replace)
    print(format_table([row]))
    print(f"\nregistered {entry.name} → {entry.ref} in {entry.file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
