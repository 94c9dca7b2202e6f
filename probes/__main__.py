"""Command line of the probes package: ``python -m probes <command> ...``.

Commands (one ``cmd_<name>(args) -> int`` function each, registered in ``build_parser``):

- ``stats``: print every dataset's counts.
- ``wsd``, ``pos``, ``mix``, ``reproduce``: the paper's probes (see ``probes/reproduce.py``).

Missing or corrupt data ends with the one clear message on stderr and exit status 2, not a traceback.
"""
from __future__ import annotations

import argparse
import sys
import time

from corpora.paths import DataMissingError

EXIT_DATA_ERROR = 2


def cmd_stats(args: argparse.Namespace) -> int:
    from corpora.stats import dataset_table, format_table

    start = time.time()
    table = dataset_table(lm=not args.no_lm)
    print(format_table(table))
    print(f"\n({time.time() - start:.1f} s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m probes", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("stats", help="print a table of every dataset's counts")
    p.add_argument("--no-lm", action="store_true", help="skip the LM corpus (its first build takes about a minute)")
    p.set_defaults(func=cmd_stats)

    from probes.reproduce import add_subcommands  # wsd, pos, mix, reproduce

    add_subcommands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "stats":   # commands that extract features (stats stays torch-free)
        from models.allocator import reuse_freed_memory

        reuse_freed_memory()
    try:
        return args.func(args)
    except DataMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_DATA_ERROR
    except ValueError as exc:  # malformed data files (e.g. WsdFormatError) and bad arguments
        from corpora.wsd_eval import WsdFormatError

        if not isinstance(exc, WsdFormatError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_DATA_ERROR


if __name__ == "__main__":
    sys.exit(main())
