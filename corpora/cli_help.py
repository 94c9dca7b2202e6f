"""Every command line's ``--help`` states its options' defaults, in one place.

Most options' help said what the option does and left its default unsaid (an outside read of every message,
docs/reliability.md round sixteen); argparse's ``ArgumentDefaultsHelpFormatter`` would add it, but only to the
parser it is given (subcommands are built by ``add_parser``, each with its own formatter) and also where a help
already names the default in words. :func:`state_defaults` walks a finished parser, subcommands included, and adds
"(default: X)" to an option's help where it has a default worth saying (not None, not a switch's False, not empty)
and its help does not already say one.

    parser = state_defaults(build_parser())
"""

from __future__ import annotations

import argparse

#: Actions whose default says nothing a reader needs (a switch is off until given; help and version print).
_SILENT = (
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse._HelpAction,
    argparse._VersionAction,
    argparse._CountAction,
    argparse._AppendConstAction,
)


def state_defaults(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with "(default: X)" added to each option's help that has a default and does not state one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():  # an alias is the same parser
                state_defaults(sub)
            continue
        default = action.default
        if (
            not action.option_strings
            or action.help == argparse.SUPPRESS
            or isinstance(action, _SILENT)
            or default in (None, "", argparse.SUPPRESS)
            or default is False
            or "default" in (action.help or "").lower()
        ):
            continue
        action.help = f"{action.help} (default: %(default)s)" if action.help else "default: %(default)s"
    return parser
