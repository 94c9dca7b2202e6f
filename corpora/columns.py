"""CoNLL-style column files (CoNLL-2000 chunks, CoNLL-2003 NER, …) as a stream of labelled sentences.

One token per line, its fields separated by tabs (when the line has a tab) or else by spaces; a
blank line ends a sentence; ``-DOCSTART-`` lines (CoNLL-2003's document breaks) are skipped. The
word and the label are fields chosen by index, from 0; a negative index counts from the end
(``-1``: the last field, where CoNLL-2003 keeps its NER tags). Every token line of a file has the
same number of fields as the first.

    # CoNLL-2000:  Confidence NN B-NP
    for sent in iter_columns("train.txt", label_column=1):     # POS
        ...
    for sent in iter_columns("train.txt", label_column=2):     # BIO chunks
        ...
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from corpora.format_errors import DataFormatError
from corpora.labelled import LabelledSentence, labelled_sentences

DOCSTART = "-DOCSTART-"
TOKEN_ID = re.compile(r"\d+([-.]\d+)?")  # a CoNLL token ID: 4, a multiword range 2-3, an empty node 8.1
CONLL_FIELDS = 8  # CoNLL-X and CoNLL-U lines have 10 fields (8 at least): a narrower file's numbers are words


def split_fields(line: str) -> list[str]:
    """A line's fields: tab-separated when the line has a tab, else whitespace-separated."""
    return line.split("\t") if "\t" in line else line.split()


def iter_columns(path: str | Path, label_column: int = -1, word_column: int = 0) -> Iterator[LabelledSentence]:
    """The sentences of a column file with the chosen word and label fields, read as a stream.

    DataFormatError (file and line) for a field index the file does not have, a line whose number
    of fields differs from the first token line's, an empty field, and a file without tokens.
    """
    width = first = 0  # fields of the first token line, and its number

    def read_token(number: int, line: str, _in_sentence: int) -> tuple[str, str] | None:
        nonlocal width, first
        cols = split_fields(line)
        if cols[0] == DOCSTART:
            return None
        if not width:
            width, first = len(cols), number
            for name, idx in (("label", label_column), ("word", word_column)):
                if not -width <= idx < width:
                    raise DataFormatError(
                        path,
                        number,
                        f"no {name} column {idx}: the lines have {width} "
                        f"field(s), columns 0..{width - 1} (or -1 for the last).",
                    )
            if (label_column - word_column) % width == 0:
                raise DataFormatError(
                    path, None, f"the label column ({label_column}) is the word column ({word_column})."
                )
        elif len(cols) != width:
            raise DataFormatError(
                path,
                number,
                f"{len(cols)} field(s), but the first token line (line {first}) "
                f"has {width}: every token line needs the same columns.",
            )
        word, label = cols[word_column].strip(), cols[label_column].strip()
        if not word or not label:
            raise DataFormatError(path, number, "empty " + ("word" if not word else "label") + " field.")
        return word, label

    for n, sentence in enumerate(labelled_sentences(path, read_token, "no sentences: no token lines in the file.")):
        if n == 0 and width >= CONLL_FIELDS and _token_ids(sentence.words):
            raise DataFormatError(
                path,
                sentence.line,
                f"the word column ({word_column}) holds {' '.join(sentence.words[:4])} …: token IDs, as CoNLL-U and "
                "CoNLL-X lines begin, not words. Read the file with --format conllu, or choose its word column "
                "(--word-column 1).",
            )
        yield sentence


def _token_ids(words: tuple[str, ...]) -> bool:
    """Whether a sentence's words are CoNLL token IDs: 1, 2, … (with "2-3" ranges, "8.1" empty nodes; a first
    token "1-2", a contraction, as Spanish or French UD begin)."""
    first = re.fullmatch(r"1(-\d+)?", words[0]) is not None
    return len(words) > 1 and first and all(TOKEN_ID.fullmatch(w) for w in words)
