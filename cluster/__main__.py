"""``python -m cluster store URL ACTION``: look after the shared feature-cache tier of ``--cache-url``.

    python -m cluster store s3://bucket/embprobe list                 # FINGERPRINT/KEY of every entry
    python -m cluster store s3://bucket/embprobe verify [FP/KEY ...]   # every byte against its checksums
    python -m cluster store s3://bucket/embprobe push FP/KEY ...       # re-publish from the local cache
    python -m cluster store s3://bucket/embprobe drop FP/KEY ...       # remove entries (all versions)

``verify`` exits 1 when an entry is damaged (``push`` from a cache that holds it, or ``drop`` it: the
next sweep extracts and publishes it again). Bad input is one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import posixpath
import sys

from cluster.storage import Store, check_store, drop_entry, entry_problems, local_entries, push_entry, remote_keys
from corpora.cli_help import state_defaults
from corpora.errors import run_command
from features import entry_rel
from probes.errors import ProbeInputError


def _entries(store: Store, names: list[str]) -> list[tuple[str, str]]:
    if not names:
        base = posixpath.dirname(entry_rel("fp"))
        return [(fp, key) for fp in store.listdir(base) for key in remote_keys(store, fp)]
    out = []
    for name in names:
        fp, sep, key = name.partition("/")
        if not sep or not fp or not key:
            raise ProbeInputError(f"{name!r}: name an entry as FINGERPRINT/KEY (see the list action).")
        out.append((fp, key))
    return out


def run(args: argparse.Namespace) -> int:
    store = check_store(args.url, "store URL", must_exist=args.action != "push")
    entries = _entries(store, args.entries)
    if args.action in ("push", "drop") and not args.entries:
        raise ProbeInputError(f"{args.action}: name the entries (FINGERPRINT/KEY ...).")
    bad = 0
    for fp, key in entries:
        if args.action == "list":
            print(f"{fp}/{key}")
        elif args.action == "verify":
            problems = entry_problems(store, fp, key, full=True)
            bad += bool(problems)
            print(f"{fp}/{key}: " + ("; ".join(problems) if problems else "ok"))
        elif args.action == "drop":
            print(f"{fp}/{key}: " + ("dropped" if drop_entry(store, fp, key) else "not in the store"))
        else:
            local = [p for p in local_entries(fp) if p.name == key]
            if not local:
                raise ProbeInputError(f"{fp}/{key}: not in the local feature cache; nothing to publish.")
            push_entry(store, local[0], force=True)
            print(f"{fp}/{key}: published")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cluster", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("store", help="list, verify, re-publish or drop entries of a shared feature-cache tier")
    p.add_argument("url", help="the store: s3://…, gs://…, file://…, a path")
    p.add_argument("action", choices=("list", "verify", "push", "drop"))
    p.add_argument("entries", nargs="*", help="FINGERPRINT/KEY (default for list and verify: every entry)")
    args = state_defaults(parser).parse_args(argv)
    return run_command(lambda: run(args), "entries verified or published before it are as said above.")


if __name__ == "__main__":
    sys.exit(main())
