"""Reader for lexical-sample word-sense data: one occurrence a line, tab-separated.

    sentence<TAB>target word index<TAB>label[<TAB>lemma]

    He sat on the bank of the river .	4	bank%1:17:01::
    She deposited the cheque at the bank .	6	bank%1:14:00::
    The banks raised their rates .	1	FINANCE	bank

``sentence`` is split on whitespace (the words the model sees); ``target word index`` is 0-based into
those words; ``label`` is any label without whitespace (a WordNet sense key or your own sense name);
the optional ``lemma`` groups targets that share a sense inventory (default: the target word lower-cased;
Senseval's ``bank.n`` also gives the POS — the WSD probe reads it, ``probes.tasks.wsd.sources.split_lemma``).
Blank lines and lines starting with ``#`` are skipped; a first line whose first field is ``sentence``
is a header.

The file is read as a stream (``iter_lexical_sample``), line by line. Every malformed line is one
``DataFormatError`` with the file and line: a wrong number of fields, an index that is not a number or
is outside the sentence, an empty sentence or label, bytes that are not UTF-8; an empty file (no
occurrence at all) is one too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from corpora.format_errors import DataFormatError
from corpora.labelled import text_lines

FIELDS = "sentence<TAB>target word index<TAB>label[<TAB>lemma]"


@dataclass(frozen=True)
class LexicalItem:
    """One labelled occurrence of a target word in its sentence."""

    words: tuple[str, ...]  # the sentence as the model sees it
    index: int  # position of the target in ``words``
    label: str  # sense key or user label
    lemma: str  # what shares an inventory: the 4th field, else the target lower-cased
    line: int  # line number in the file (for messages)
    lemma_given: bool = True  # False: no 4th field, ``lemma`` is the target word lower-cased

    @property
    def target(self) -> str:
        return self.words[self.index]


def parse_line(text: str, where: str, lineno: int) -> LexicalItem | None:
    """One line -> an item (None for a blank line, a comment or the header); DataFormatError otherwise."""
    text = text.rstrip("\r\n")
    if not text.strip() or text.lstrip().startswith("#"):
        return None
    fields = text.split("\t")
    if lineno == 1 and fields[0].strip().lower() == "sentence":
        return None
    if len(fields) not in (3, 4):
        raise DataFormatError(where, lineno, f"{len(fields)} tab-separated fields; expected 3 or 4: {FIELDS}")
    words = tuple(fields[0].split())
    if not words:
        raise DataFormatError(where, lineno, "empty sentence")
    raw_index = fields[1].strip()
    try:
        index = int(raw_index)
    except ValueError:
        raise DataFormatError(where, lineno, f"target word index {raw_index!r} is not a whole number") from None
    if not 0 <= index < len(words):
        raise DataFormatError(
            where,
            lineno,
            f"target word index {index} is out of range: the sentence has "
            f"{len(words)} words (indices 0..{len(words) - 1})",
        )
    label = fields[2].strip()
    if not label or len(label.split()) != 1:
        raise DataFormatError(where, lineno, f"label {fields[2]!r} is empty or contains spaces")
    lemma = fields[3].strip() if len(fields) == 4 else ""
    return LexicalItem(words, index, label, lemma or words[index].lower(), lineno, bool(lemma))


def iter_lines(lines: Iterable[bytes], where: str) -> Iterator[LexicalItem]:
    """Items of a stream of raw lines (a file, an upload's ``BytesIO``); ``where`` names it in errors."""
    count = 0
    for lineno, text in text_lines(lines, where):
        item = parse_line(text, where, lineno)
        if item is not None:
            count += 1
            yield item
    if not count:
        raise DataFormatError(where, None, f"empty file: no occurrences (one line per occurrence: {FIELDS})")


def iter_lexical_sample(path: str | Path) -> Iterator[LexicalItem]:
    """Stream the items of a lexical-sample file (bounded memory)."""
    with open(path, "rb") as fh:
        yield from iter_lines(fh, str(path))


def read_lexical_sample(source: str | Path | BinaryIO, name: str | None = None) -> list[LexicalItem]:
    """Every item of a file path or an open binary stream (``name`` labels a stream in errors)."""
    if isinstance(source, (str, Path)):
        return list(iter_lexical_sample(source))
    return list(iter_lines(source, name or getattr(source, "name", "<upload>")))
