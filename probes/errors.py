"""The one error probes raise for bad requests (the CLI turns it into a message and exit code 2)."""

from __future__ import annotations

from corpora.errors import RequestError


class ProbeInputError(RequestError):
    """A request a probe cannot serve: unknown layer spec, layer out of range, empty data slice…"""


def check_positive(value: int | float | None, flag: str) -> None:
    """A count given as ``flag`` (a limit, epochs) must be positive when given (None: not given)."""
    if value is not None and value <= 0:
        raise ProbeInputError(f"{flag} {value} selects nothing; use a positive number.")
