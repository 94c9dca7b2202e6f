"""The lab's one exception base: every error raised for a request, a file or a model the lab cannot serve.

Each subclass names what is wrong in its message, so the command line prints any ``LabError`` as one
``error:`` line (exit 2) and the app as one message; anything else reaching them is a bug and keeps
its traceback. Subclasses also derive from the builtin they refine (``ValueError``, ``KeyError``,
``RuntimeError``) so callers that catch those keep working.

    corpora.errors.LabError
    ├── RequestError (ValueError)        a request out of range: bad option, layer, empty slice
    │   └── probes.errors.ProbeInputError
    ├── corpora.paths.DataMissingError   a data file or folder that is not there
    ├── corpora.format_errors.DataFormatError   FILE:LINE: a malformed data file
    ├── models.base.ModelLoadError, UnknownModelError, …
    └── features.checks.FeatureCacheError
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 2, 130, 143  # 128 + SIGINT (Ctrl-C), 128 + SIGTERM (a scheduler)


class Terminated(KeyboardInterrupt):
    """A SIGTERM (a scheduler's preemption, ``kill``), taken the way Ctrl-C is: the same clean-ups run."""


def _terminate(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one (a scheduler signals the whole group) waits
    raise Terminated


class LabError(Exception):
    """Base of every error the lab reports as one line (module notes)."""

    def __str__(self) -> str:
        # KeyError quotes its message (repr); a LabError that is also a KeyError reads as plain text.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class RequestError(LabError, ValueError):
    """A request that cannot be served as asked: an option out of range, an unknown name, an empty slice."""


def run_command(command: Callable[[], int], interrupted: str) -> int:
    """A command line's body run as every ``python -m …`` runs it: a ``LabError`` is one ``error:`` line (exit 2),
    running out of memory one line saying what to do (exit 2: the input is too big for this machine, not a bug), Ctrl-C
    one ``interrupted:`` line saying what was kept (exit 130), and a SIGTERM the same (exit 143): it had killed the
    process at once, its temporaries left behind and no line said; anything else is a bug and keeps its traceback."""
    main = threading.current_thread() is threading.main_thread()  # only the main thread may set a handler
    before = signal.signal(signal.SIGTERM, _terminate) if main else None
    try:
        return command()
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError as exc:  # numpy's _ArrayMemoryError too: a whole big file parsed, a matrix of it allocated
        said = f" ({exc})" if str(exc) else ""
        print(
            f"error: out of memory{said}. The input is too big to hold at once on this machine: take a slice "
            "(--limit N sentences, where the command has it), or run it where there is more memory.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        print(f"interrupted{' (SIGTERM)' if isinstance(exc, Terminated) else ''}: {interrupted}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    finally:
        if main:  # the caller's own handler again (a notebook, the test runner)
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)  # None: not set from Python
