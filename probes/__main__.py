"""``python -m probes``: see ``probes.cli``."""
import sys

from probes.cli import main

if __name__ == "__main__":
    sys.exit(main())
