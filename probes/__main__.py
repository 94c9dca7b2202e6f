"""``python -m probes``: the program. It composes the command line of ``probes.cli`` (the probes, ``stats``,
``compare``, ``reproduce``) with the commands of the layers above it (``sweep`` and ``extract`` from
``cluster.cli``): an entry point may import any layer, ``probes.cli`` imports none above ``probes``.

    python -m probes pos --model minilm
    python -m probes sweep --models minilm,gpt-small --probes wsd,pos --ray local
"""

from __future__ import annotations

import sys

from cluster.cli import add_extract, add_sweep
from probes import cli

COMMANDS: tuple[cli.AddCommand, ...] = (add_sweep, add_extract)


def main(argv: list[str] | None = None) -> int:
    """``probes.cli.main`` with every command of the program."""
    return cli.main(argv, COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
