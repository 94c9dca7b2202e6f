"""The one error every data-file reader raises on a malformed file: the file, the line, what is wrong.

A reader of a user's file (CoNLL-U, column files, edge-probing JSON lines, WSD XML + keys, TSV)
never lets a traceback reach the user: it raises :class:`DataFormatError`, whose message starts with
``FILE:LINE:`` so that an editor jumps to the place; the command line prints it as one ``error:``
line (exit 2) and the app as one message.
"""

from __future__ import annotations

from pathlib import Path

from corpora.errors import LabError


class DataFormatError(LabError, ValueError):
    """A data file that cannot be read as its format: ``path:line: message`` (line None: the whole file)."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")
