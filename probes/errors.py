"""The one error probes raise for bad requests (the CLI turns it into a message and exit code 2)."""
from __future__ import annotations


class ProbeInputError(ValueError):
    """A request a probe cannot serve: unknown layer spec, layer out of range, empty data slice…"""
