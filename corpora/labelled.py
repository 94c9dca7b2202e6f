"""Records of a user's labelled data files, and the text stream every reader of them shares.

Readers of token-labelling files (``corpora.conllu``, ``corpora.columns``) yield
:class:`LabelledSentence`; the edge-probing reader (``corpora.edge_probing``) yields
:class:`SpanSentence`. Each record keeps the line on which it starts, so a later check (a label
never seen, a span out of range) can still say where.

:func:`labelled_sentences` is the sentence loop both token readers share (a blank line ends a
sentence); each reader gives it only how one line becomes a (word, label).

:func:`numbered_lines` is the one way a reader gets at a file: line by line (bounded memory for any
file size), decoded as UTF-8 line by line so that a bad byte is reported with its line number, with
the trailing newline removed. An empty file is a :class:`DataFormatError` of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from corpora.format_errors import DataFormatError


@dataclass(frozen=True)
class LabelledSentence:
    """One sentence of a token-labelling file: its words and one label per word."""

    words: tuple[str, ...]
    labels: tuple[str, ...]
    line: int = 0  # line of the sentence's first token


@dataclass(frozen=True)
class SpanTarget:
    """One edge-probing target: span1 (and span2) as [start, end) word offsets, and its label."""

    span1: tuple[int, int]
    label: str
    span2: tuple[int, int] | None = None


@dataclass(frozen=True)
class SpanSentence:
    """One line of an edge-probing file: the words of ``text`` and its targets."""

    words: tuple[str, ...]
    targets: tuple[SpanTarget, ...]
    line: int = 0


def text_lines(lines: Iterable[bytes], where: str | Path, error: type[DataFormatError] = DataFormatError):
    """(line number from 1, text without the newline) of a stream of raw lines (a file, an upload's ``BytesIO``),
    as every text reader of the lab reads them: LF, CRLF or a bare CR end a line (no UTF-8 sequence holds the byte
    0x0d, so bytes split safely), a UTF-8 byte-order mark on line 1 is dropped, and bytes that are not UTF-8 are
    ``error(where, line, …)`` naming the byte and its column."""
    number = 0
    for raw in lines:
        for piece in raw.rstrip(b"\r\n").split(b"\r"):
            number += 1
            try:
                line = piece.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(
                    where,
                    number,
                    f"not UTF-8 text (byte 0x{piece[exc.start]:02x} at column {exc.start + 1}); "
                    "save the file as UTF-8.",
                ) from None
            yield number, line.removeprefix("\ufeff") if number == 1 else line


def numbered_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without the newline) for every line of ``path``, streamed (``text_lines``).

    DataFormatError for a missing or unreadable file, an empty file, or bytes that are not UTF-8
    (naming the line and the byte offset in it). A UTF-8 byte-order mark is dropped; lines may end in LF, CRLF or
    a bare CR.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - opened here to tell a missing file from a bad line; closed by `with fh`
    except OSError as exc:
        raise DataFormatError(path, None, f"cannot read the file ({exc.strerror}).") from None
    with fh:
        number = 0
        for number, line in text_lines(fh, path):
            yield number, line
        if number == 0:
            raise DataFormatError(path, None, "the file is empty.")


#: ``read_token(line number, line, words so far in the sentence)`` -> (word, label), or None for a line
#: that is no token (a comment, a document break); it raises DataFormatError for a bad line.
ReadToken = Callable[[int, str, int], "tuple[str, str] | None"]


def labelled_sentences(path: str | Path, read_token: ReadToken, nothing: str) -> Iterator[LabelledSentence]:
    """The blank-line-separated sentences of ``path`` as a stream, each token line read by ``read_token``;
    DataFormatError ``nothing`` when the file has no token at all."""
    words: list[str] = []
    labels: list[str] = []
    start = sentences = 0
    for number, line in numbered_lines(path):
        if not line.strip():
            if words:
                yield LabelledSentence(tuple(words), tuple(labels), start)
                sentences += 1
                words, labels = [], []
            continue
        token = read_token(number, line, len(words))
        if token is None:
            continue
        if not words:
            start = number
        words.append(token[0])
        labels.append(token[1])
    if words:
        yield LabelledSentence(tuple(words), tuple(labels), start)
        sentences += 1
    if sentences == 0:
        raise DataFormatError(path, None, nothing)
