"""The LM corpus's sources: each read and tokenized into documents (lists of token sentences).

Tokenization per source (tokens are otherwise kept as the corpus gives them):

- ``brown``: the corpus' own word/sentence segmentation (``brown.sents``), tags dropped.
- ``movie_reviews``: already tokenized, one sentence a line; split on whitespace.
- ``abc``, ``webtext``, ``state_union``, ``inaugural``: raw lines, split into sentences by a
  regex splitter (Punkt models are not available offline) and into PTB-style tokens by NLTK's
  rule-based ``NLTKWordTokenizer`` (needs no data files).
- ``wikitext103-valid`` / ``wikitext103-test``: headings ``= ... =`` and blank lines skipped,
  ``@-@``/``@,@``/``@.@`` joined back (``1 @,@ 000`` -> ``1,000``), sentences split after a
  ``.`` token; ``<unk>`` kept as a token.

:mod:`corpora.lm_corpus` turns the documents into the split, cached corpus.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from corpora.nltk_corpora import UNREADABLE_ZIP, nltk_corpus
from corpora.paths import DataMissingError, data_path, nltk_module

NLTK_SOURCES: tuple[str, ...] = ("brown", "abc", "webtext", "movie_reviews", "state_union", "inaugural")
WIKITEXT_SOURCES: dict[str, str] = {
    "wikitext103-valid": "lm_corpus/wikitext-103/wiki.valid.tokens",
    "wikitext103-test": "lm_corpus/wikitext-103/wiki.test.tokens",
}
DEFAULT_SOURCES: tuple[str, ...] = NLTK_SOURCES + tuple(WIKITEXT_SOURCES)

Document = list[list[str]]  # sentences of tokens


# --------------------------------------------------------------------------- tokenization

# Words whose trailing "." does not end a sentence (lower-cased, without the dot).
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft no vs etc inc ltd co corp gov gen col lt sgt capt rep sen "  # noqa: SIM905
    "rev hon jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n e.g i.e a.m p.m".split()
)
# A candidate boundary: . ! or ? (plus closing quotes/brackets), whitespace, then a capital,
# digit or opening quote.
_BOUNDARY = re.compile(r"[.!?]+['\")\]]*\s+(?=['\"(\[`]*[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Regex sentence splitter: breaks after . ! ? before a capital, skipping abbreviations/initials."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if text[m.start()] == ".":
            prev = text[start : m.start()].rsplit(None, 1)
            word = prev[-1].lower().lstrip("(\"'") if prev else ""
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        out.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


@lru_cache(maxsize=1)
def _word_tokenizer():
    return nltk_module().tokenize.NLTKWordTokenizer()


def tokenize(sentence: str) -> list[str]:
    """PTB-style word tokens of one sentence (NLTK's rule-based tokenizer, no data needed)."""
    return _word_tokenizer().tokenize(sentence)


# --------------------------------------------------------------------------- sources


def _plaintext_documents(name: str) -> Iterator[Document]:
    reader = nltk_corpus(name)
    for fid in reader.fileids():
        if fid.upper().startswith("README"):
            continue
        doc = []
        for line in reader.raw(fid).splitlines():
            line = line.strip()
            if line:
                doc.extend(toks for toks in map(tokenize, split_sentences(line)) if toks)
        yield doc


def _brown_documents() -> Iterator[Document]:
    reader = nltk_corpus("brown")
    for fid in reader.fileids():
        yield [list(s) for s in reader.sents(fid)]


def _movie_review_documents() -> Iterator[Document]:
    reader = nltk_corpus("movie_reviews")
    for fid in reader.fileids():
        yield [line.split() for line in reader.raw(fid).splitlines() if line.strip()]


# " = Title = " (level 1), " = = Section = = " (level 2), ...
_WIKI_HEADING = re.compile(r"^\s*((?:=\s+)+)\S.*?(?:\s+=)+\s*$")
_WIKI_JOIN = ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."))


def wikitext_paragraph(line: str) -> list[list[str]]:
    """Sentences of one WikiText paragraph line (``@-@`` joins undone, split after '.' tokens)."""
    for old, new in _WIKI_JOIN:
        line = line.replace(old, new)
    sents, cur = [], []
    for tok in line.split():
        cur.append(tok)
        if tok == ".":
            sents.append(cur)
            cur = []
    if cur:
        sents.append(cur)
    return sents


def _wikitext_documents(path: Path) -> Iterator[Document]:
    """One document per article (a top-level ``= Title =`` heading starts a new article)."""
    doc: Document = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = _WIKI_HEADING.match(line)
            if m:
                if m.group(1).count("=") == 1 and doc:
                    yield doc
                    doc = []
                continue
            if line.strip():
                doc.extend(wikitext_paragraph(line))
    if doc:
        yield doc


def _source_documents(source: str) -> Iterator[Document]:
    if source == "brown":
        return _brown_documents()
    if source == "movie_reviews":
        return _movie_review_documents()
    if source in NLTK_SOURCES:
        return _plaintext_documents(source)
    if source in WIKITEXT_SOURCES:
        return _wikitext_documents(data_path(WIKITEXT_SOURCES[source]))
    raise ValueError(f"unknown LM corpus source {source!r}; choose from {', '.join(DEFAULT_SOURCES)}")


def read_source(source: str) -> Iterator[Document]:
    """Documents of one source; an unreadable (corrupt/truncated) file becomes DataMissingError."""
    documents = _source_documents(source)  # an unknown source: its own ValueError, before any file is read
    try:
        yield from documents
    except UNREADABLE_ZIP as exc:
        item = WIKITEXT_SOURCES.get(source, f"nltk_data/corpora/{source}.zip")
        raise DataMissingError(item, f"Could not read it: {exc}.") from exc


def source_files(source: str) -> list[Path]:
    """The data files a source is read from (its cache entries are keyed by their ``files_fingerprint``)."""
    if source in WIKITEXT_SOURCES:
        return [data_path(WIKITEXT_SOURCES[source])]
    return [data_path(f"nltk_data/corpora/{source}.zip")]
