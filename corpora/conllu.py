"""CoNLL-U (Universal Dependencies) as a stream of labelled sentences, one label column chosen.

The format (https://universaldependencies.org/format.html): one word per line with ten
tab-separated fields ``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC``, ``#`` comment lines,
a blank line after each sentence. As the format defines it, multiword-token lines (ID ``1-2``, e.g.
*don't* = *do* + *n't*) and empty nodes (ID ``8.1``, enhanced graphs only) are not words: they are
skipped, and the words are the syntactic words 1, 2, 3 … that follow them.

The label of each word is one of ``COLUMNS`` (``UPOS``, ``XPOS``, ``DEPREL``, ``LEMMA``) or one key of
the FEATS or MISC field, written ``feats:Number`` or ``misc:SpaceAfter``; a word without that key gets
``NO_VALUE`` ("_"), as the format writes an empty field. ``DEPREL`` keeps its subtype (``nmod:poss``).

Why not the ``conllu`` package: its ``parse_incr`` streams, but its errors carry no line number and it
builds a dict per token (FEATS, DEPS, MISC parsed whether asked for or not); a probe needs two fields
of each line and must say ``FILE:LINE`` for every problem. The reader below is that much and no more.

    for sent in iter_conllu("en_ewt-ud-train.conllu", "feats:Number"):
        sent.words, sent.labels        # ("Al", "-", "Zaman", …), ("Sing", "_", "Sing", …)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from corpora.format_errors import DataFormatError
from corpora.labelled import LabelledSentence, labelled_sentences

FIELDS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
COLUMNS = ("UPOS", "XPOS", "DEPREL", "LEMMA")
NO_VALUE = "_"
USAGE = "choose UPOS, XPOS, DEPREL, LEMMA, feats:KEY (e.g. feats:Number) or misc:KEY"


def parse_column(path: str | Path, column: str) -> tuple[int, str | None]:
    """(field index, key or None) of a label column; DataFormatError naming the choices otherwise."""
    text = str(column).strip()
    kind, _, key = text.partition(":")
    if key and kind.lower() in ("feats", "misc"):
        return FIELDS.index(kind.upper()), key
    if not key and text.upper() in COLUMNS:
        return FIELDS.index(text.upper()), None
    raise DataFormatError(path, None, f"no label column {text!r} in CoNLL-U: {USAGE}.")


def _keyed(path: str | Path, number: int, field: str, key: str) -> tuple[str, set[str]]:
    """The value of ``key`` in a FEATS/MISC field (``NO_VALUE`` when absent) and the keys present."""
    if field == NO_VALUE:
        return NO_VALUE, set()
    pairs = {}
    for item in field.split("|"):
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise DataFormatError(path, number, f"bad FEATS/MISC item {item!r}: write Key=Value pairs joined by '|'.")
        pairs[name] = value
    return pairs.get(key, NO_VALUE), set(pairs)


def iter_conllu(path: str | Path, column: str = "UPOS") -> Iterator[LabelledSentence]:
    """The sentences of a CoNLL-U file with the chosen label column, read as a stream.

    DataFormatError (file and line) for a line without ten tab-separated fields, a bad or
    out-of-sequence word ID, an empty FORM, a malformed FEATS/MISC item, a file without sentences,
    and a label column that no word of the file has.
    """
    index, key = parse_column(path, column)
    seen_keys: set[str] = set()
    any_label = False

    def read_token(number: int, line: str, in_sentence: int) -> tuple[str, str] | None:
        nonlocal any_label
        if line.startswith("#"):
            return None
        cols = line.split("\t")
        if len(cols) != 10:
            raise DataFormatError(
                path, number, f"expected 10 tab-separated fields ({' '.join(FIELDS)}), found {len(cols)}."
            )
        wid = cols[0]
        if "-" in wid or "." in wid:  # multiword token range or empty node: not a word
            lo, sep, hi = wid.partition("-" if "-" in wid else ".")
            if not (lo.isdigit() and hi.isdigit()):
                raise DataFormatError(path, number, f"bad word ID {wid!r}.")
            return None
        if not wid.isdigit():
            raise DataFormatError(path, number, f"bad word ID {wid!r}: expected 1, 2, 3 …, a range 1-2 or 1.1.")
        if int(wid) != in_sentence + 1:
            raise DataFormatError(
                path,
                number,
                f"word ID {wid} follows word {in_sentence}: IDs run 1, 2, 3 … "
                "within a sentence, and a blank line ends each sentence.",
            )
        if not cols[1]:
            raise DataFormatError(path, number, "empty FORM field.")
        if key is None:
            label = cols[index]
        else:
            label, keys = _keyed(path, number, cols[index], key)
            seen_keys.update(keys)
        any_label = any_label or label != NO_VALUE
        return cols[1], label

    yield from labelled_sentences(path, read_token, "no sentences: no word lines (ID FORM … MISC) in the file.")
    if not any_label:
        found = f" (keys present: {', '.join(sorted(seen_keys)[:12])})" if key is not None and seen_keys else ""
        raise DataFormatError(path, None, f"no word has a value in label column {column!r}{found}.")
