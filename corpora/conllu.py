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
    for tree in iter_trees("en_ewt-ud-train.conllu"):
        tree.heads, tree.deprels       # (0, 1, 1, …) 1-based, 0 = root; ("root", "punct", "flat", …)

Trees (``iter_trees``, for the structural and attention-head probes): each word's HEAD and DEPREL as a
:class:`DepTree`, checked as a tree — a HEAD that is no word of the sentence, a sentence without exactly
one root (HEAD 0) or heads that form a cycle is a DataFormatError at its line. Punctuation stays in the
tree (``upos``); ``DepTree.scored`` marks the non-PUNCT words that structural metrics count.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from corpora.format_errors import DataFormatError
from corpora.labelled import LabelledSentence, labelled_sentences

FIELDS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
COLUMNS = ("UPOS", "XPOS", "DEPREL", "LEMMA")
NO_VALUE = "_"
PUNCT = "PUNCT"
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


def _word_fields(path: str | Path, number: int, line: str, in_sentence: int) -> list[str] | None:
    """The ten fields of a word line, checked; None for a comment, a multiword token or an empty node."""
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
        if not (lo.isdecimal() and hi.isdecimal()) or (sep == "-" and int(lo) >= int(hi)):
            raise DataFormatError(path, number, f"bad word ID {wid!r}: a multiword token spans words lo-hi, lo < hi.")
        return None
    if not wid.isdecimal():
        raise DataFormatError(path, number, f"bad word ID {wid!r}: expected 1, 2, 3 …, a range 1-2 or 1.1.")
    if int(wid) != in_sentence + 1:
        raise DataFormatError(
            path,
            number,
            f"word ID {wid} follows word {in_sentence}: IDs run 1, 2, 3 … "
            "within a sentence, and a blank line ends each sentence.",
        )
    if not cols[1].strip():
        raise DataFormatError(path, number, "empty FORM field (or spaces only).")
    return cols


def _read(path: str | Path, number: int, cols: list[str], *fields: int) -> list[str]:
    """The fields a reader uses (indices into ``FIELDS``); an empty one is a broken line, not the label "" (a
    field with no value is written "_"). Fields it does not read may be empty: a stray tab breaks nothing."""
    empty = [FIELDS[i] for i in fields if not cols[i]]
    if empty:
        raise DataFormatError(path, number, f"empty {', '.join(empty)} field: CoNLL-U writes '_' for no value.")
    return [cols[i] for i in fields]


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
        cols = _word_fields(path, number, line, in_sentence)
        if cols is None:
            return None
        (field,) = _read(path, number, cols, index)
        if key is None:
            label = field
        else:
            label, keys = _keyed(path, number, field, key)
            seen_keys.update(keys)
        any_label = any_label or label != NO_VALUE
        return cols[1], label

    yield from labelled_sentences(path, read_token, "no sentences: no word lines (ID FORM … MISC) in the file.")
    if not any_label:
        found = f" (keys present: {', '.join(sorted(seen_keys)[:12])})" if key is not None and seen_keys else ""
        raise DataFormatError(path, None, f"no word has a value in label column {column!r}{found}.")


@dataclass(frozen=True)
class DepTree:
    """One sentence's basic dependency tree: word i (0-based) hangs from ``heads[i]`` (1-based, 0 = root).

    ``upos`` keeps punctuation in the tree; ``scored`` is the mask of the words a structural metric counts
    (not UPOS ``PUNCT``, as Hewitt & Manning leave punctuation out). ``lines``: each word's line in the file.
    """

    words: tuple[str, ...]
    heads: tuple[int, ...]
    deprels: tuple[str, ...]
    upos: tuple[str, ...]
    line: int = 0
    lines: tuple[int, ...] = ()

    @property
    def scored(self) -> np.ndarray:
        return np.array([u != PUNCT for u in self.upos], dtype=bool)


def _checked_tree(path: str | Path, sent: LabelledSentence) -> DepTree:
    """The sentence's tree; DataFormatError at the word's line for a HEAD that is no word of the sentence,
    a sentence without exactly one root, or words whose heads form a cycle (never reach the root)."""
    fields = [label.split("\t") for label in sent.labels]
    lines = tuple(int(f[0]) for f in fields)
    n = len(fields)
    heads = []
    for (number, head, _, _), word in zip(fields, sent.words):
        if not head.isdecimal() or int(head) > n:
            raise DataFormatError(
                path, int(number), f"HEAD {head!r} of {word!r} is no word of its {n}-word sentence (0 = root, 1…{n})."
            )
        heads.append(int(head))
    roots = [i for i, h in enumerate(heads) if h == 0]
    if len(roots) != 1:
        raise DataFormatError(path, sent.line, f"the sentence has {len(roots)} roots (HEAD 0); a tree has one.")
    # node 0 is the root, node i the word i: a tree iff every word is connected to node 0
    graph = csr_matrix((np.ones(n), (np.arange(1, n + 1), heads)), shape=(n + 1, n + 1))
    _, component = connected_components(graph, directed=False)
    cut = np.flatnonzero(component[1:] != component[0])
    if cut.size:
        i = int(cut[0])
        raise DataFormatError(
            path, lines[i], f"HEAD of {sent.words[i]!r} leads into a cycle of heads that never reaches the root."
        )
    return DepTree(sent.words, tuple(heads), tuple(f[2] for f in fields), tuple(f[3] for f in fields), sent.line, lines)


def iter_trees(path: str | Path) -> Iterator[DepTree]:
    """The sentences of a CoNLL-U file as dependency trees (HEAD, DEPREL, UPOS per word), read as a stream.

    The same checks as ``iter_conllu``, and each sentence's heads checked as one tree (``_checked_tree``); a file
    in which no word has a UPOS tag is refused at its end (its punctuation could not be left out of the metrics).
    """
    tagged = False

    def read_token(number: int, line: str, in_sentence: int) -> tuple[str, str] | None:
        cols = _word_fields(path, number, line, in_sentence)
        # the fields a tree needs, tab-joined as the sentence's "label" (a tab is in no field)
        if cols is None:
            return None
        head, deprel, upos = _read(path, number, cols, 6, 7, 3)
        return cols[1], f"{number}\t{head}\t{deprel}\t{upos}"

    for sent in labelled_sentences(path, read_token, "no sentences: no word lines (ID FORM … MISC) in the file."):
        tree = _checked_tree(path, sent)
        tagged = tagged or any(u != NO_VALUE for u in tree.upos)
        yield tree
    if not tagged:
        raise DataFormatError(
            path,
            None,
            "no word has a UPOS tag (the column is '_' throughout): the structural metrics leave punctuation "
            "(UPOS PUNCT) out, as Hewitt & Manning do, and could not find it. Tag the file's UPOS (a UD tagger: "
            "Stanza, UDPipe) or use a treebank that has it.",
        )
