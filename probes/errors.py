"""The one error probes raise for bad requests (the CLI turns it into a message and exit code 2)."""

from __future__ import annotations

import os
from pathlib import Path

from corpora.errors import LabError, RequestError


class ProbeInputError(RequestError):
    """A request a probe cannot serve: unknown layer spec, layer out of range, empty data slice…"""


class ResultsNotSavedError(LabError):
    """A finished run whose results could not be written (a full disk, a folder gone); ``run`` holds them, so a
    caller can still show the numbers (``probes.run.ProbeRun``)."""

    def __init__(self, folder: Path, exc: OSError, run=None) -> None:
        why = exc.strerror or str(exc)
        super().__init__(
            f"The results could not be saved in {folder}: {why}. Free some space or choose another results folder "
            "(a command's --results; reproduce's --out), and run again to keep them."
        )
        self.run = run


def check_positive(value: int | float | None, flag: str) -> None:
    """A count given as ``flag`` (a limit, epochs) must be positive when given (None: not given)."""
    if value is not None and value <= 0:
        raise ProbeInputError(f"{flag} {value} selects nothing; use a positive number.")


#: The seeds numpy's and torch's generators take: 0 … 2**32 − 1.
MAX_SEED = 2**32 - 1


def check_seeds(first: int, count: int = 1, flag: str = "--seed") -> None:
    """Seeds ``first`` … ``first + count − 1`` (``--seed`` and ``--seeds``) must be ones numpy and torch take."""
    if first < 0 or first + count - 1 > MAX_SEED:
        last = "" if count == 1 else f" (with --seeds {count}: up to {first + count - 1})"
        raise ProbeInputError(f"{flag} {first}{last}: seeds run from 0 to {MAX_SEED}.")


def no_file(flag: str, path: str | Path) -> ProbeInputError:
    """The error for an input option that names no file: "is a folder" where it names one, else "no such file"."""
    return ProbeInputError(f"{flag} {path}: {'is a folder; give a file' if Path(path).is_dir() else 'no such file'}.")


def writable_dir(path: str | Path, flag: str) -> Path:
    """``path`` as an output directory that exists and is writable (``~`` expanded, as a shell does not in
    ``--results=~/runs``); ProbeInputError otherwise."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise ProbeInputError(f"{flag} {path} is a file; give a directory.")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProbeInputError(f"{flag} {path}: cannot create it ({exc.strerror}).") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ProbeInputError(f"{flag} {path} is not writable.")
    return path
