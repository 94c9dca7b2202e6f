"""WordNet 3.0 senses through NLTK, with ``NLTK_DATA`` pointed at the data dir by the project.

``senses(lemma, pos)`` lists a lemma's senses in WordNet order (sense number 1 first, i.e. the
most frequent sense in WordNet's tagged counts: the MFS baseline). ``pos`` may be a universal
tag (NOUN, VERB, ADJ, ADV), a PTB tag (NN, VBD, JJR, RB, ...) or a WordNet letter (n, v, a, s, r);
adjectives always include satellites (``s``). Other word classes (DET, IN, ...) have no senses.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from corpora.cache import cached, files_fingerprint
from corpora.errors import LabError
from corpora.paths import DataMissingError, data_path, nltk_module, setup_nltk

UNIVERSAL_TO_WN = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}
# Universal tags of word classes WordNet does not cover (and "." for punctuation).
_NON_CONTENT_UNIVERSAL = {
    "DET",
    "ADP",
    "PRON",
    "CONJ",
    "PRT",
    "NUM",
    "X",
    ".",
    "PUNCT",
    "AUX",
    "CCONJ",
    "SCONJ",
    "PART",
    "INTJ",
    "PROPN",
    "SYM",
}
_PTB_PREFIX_TO_WN = (("NN", "n"), ("VB", "v"), ("JJ", "a"), ("RB", "r"))
_PTB_NON_CONTENT = {
    "CC",
    "CD",
    "DT",
    "EX",
    "FW",
    "IN",
    "LS",
    "MD",
    "PDT",
    "POS",
    "PRP",
    "PRP$",
    "RP",
    "SYM",
    "TO",
    "UH",
    "WDT",
    "WP",
    "WP$",
    "WRB",
    "-NONE-",
    ",",
    ":",
    "``",
    "''",
    "-LRB-",
    "-RRB-",
    "#",
    "$",
    "(",
    ")",
}
# Older PTB spellings that occur in SemCor (NP = NNP, PP = PRP, ...).
_PTB_OLD = {"NP": "n", "NPS": "n", "PP": None, "PP$": None, "PR": None}


class UnknownSenseKeyError(LabError, KeyError):
    """A sense key that is not in WordNet 3.0."""


@dataclass(frozen=True)
class Sense:
    key: str  # WordNet 3.0 sense key, e.g. "art%1:09:00::"
    synset: str  # synset name, e.g. "art.n.01"
    gloss: str  # the synset's definition
    lexname: str  # lexicographer file, e.g. "noun.cognition" (a coarse supersense)
    pos: str  # WordNet letter of the synset: n, v, a, s or r


def wn_pos(pos: str) -> str | None:
    """WordNet letter (n, v, a, r) of a universal/PTB/WordNet tag; None for a non-content class.

    Raises:
        ValueError: a tag of no known tag set.
    """
    if pos in UNIVERSAL_TO_WN:
        return UNIVERSAL_TO_WN[pos]
    if pos in ("n", "v", "a", "r"):
        return pos
    if pos == "s":
        return "a"
    if "|" in pos:  # an ambiguous SemCor tag such as "MD|VB": the first reading
        pos = pos.split("|", 1)[0]
    if pos in _PTB_OLD:
        return _PTB_OLD[pos]
    for prefix, letter in _PTB_PREFIX_TO_WN:
        if pos.startswith(prefix) and pos.isupper():
            return letter
    if pos in _NON_CONTENT_UNIVERSAL or pos in _PTB_NON_CONTENT:
        return None
    raise ValueError(
        f"unknown POS tag {pos!r}: use a universal (NOUN, VERB, ADJ, ADV, ...), "
        "Penn Treebank (NN, VBD, ...) or WordNet (n, v, a, s, r) tag"
    )


def wordnet():
    """NLTK's WordNet reader on the data dir's WordNet 3.0 (loaded once per folder).

    Built on the folder explicitly rather than via ``nltk.corpus.wordnet``, a process-wide
    singleton that stays bound to the first ``nltk_data`` it found.
    """
    return _wordnet_for(os.environ.get("EMBPROBE_DATA"))


@lru_cache(maxsize=4)
def _wordnet_for(embprobe_data: str | None):
    # Keyed on the data-dir setting: resolving the folder stats the file system, which cost more
    # than the lookup itself when the WSD probe asked for 100k+ lemmas (docs/benchmarks.md).
    return _wordnet_reader(str(data_path("nltk_data/corpora/wordnet")))


WN_POS_FILES = ("noun", "verb", "adj", "adv")
#: The files NLTK's WordNet reader opens (lazily: one missing was a traceback at the first lookup, not at load).
WORDNET_FILES = ("lexnames", "index.sense", *(f"{kind}.{pos}" for kind in ("index", "data") for pos in WN_POS_FILES))


@lru_cache(maxsize=2)
def _wordnet_reader(folder: str):
    missing = [name for name in WORDNET_FILES if not (Path(folder) / name).is_file()]
    if missing:
        raise DataMissingError(
            f"nltk_data/corpora/wordnet/{missing[0]}", f"WordNet 3.0 needs {', '.join(missing)} in that folder."
        )
    setup_nltk()
    nltk = nltk_module()  # loaded here, not at import: a warm WSD run never loads it

    class _Reader(nltk.corpus.reader.wordnet.WordNetCorpusReader):
        # NLTK >= 3.8 builds a WordNet-version map on load (two passes over index.sense, about two
        # thirds of the load time) that only its multilingual (OMW) functions read; we use no OMW.
        def map_wn(self, version="wordnet"):
            return None

    try:
        with warnings.catch_warnings():  # "multilingual functions are not available": no OMW wanted
            warnings.simplefilter("ignore", UserWarning)
            return _Reader(nltk.data.FileSystemPathPointer(folder), None)
    except (OSError, LookupError, ValueError) as exc:
        raise DataMissingError("nltk_data/corpora/wordnet", f"NLTK could not load it: {exc}.") from exc


# NLTK's WordNet reader is not thread-safe: it reads synsets lazily through one shared file handle per
# part of speech (seek, then readline), so two threads interleave and read each other's lines
# (WordNetError, AttributeError; seen with three browser sessions at once, docs/benchmarks.md). Every
# access to the reader below holds this lock; lookups are microseconds once loaded, so it costs nothing.
_READER_LOCK = threading.RLock()


def _sense(lemma) -> Sense:
    syn = lemma.synset()
    return Sense(key=lemma.key(), synset=syn.name(), gloss=syn.definition(), lexname=syn.lexname(), pos=syn.pos())


@lru_cache(maxsize=65536)
def _senses(lemma: str, letter: str, wn) -> tuple[Sense, ...]:
    name = lemma.strip().lower().replace(" ", "_")
    found = wn.lemmas(name, pos=letter)
    if not found:  # an inflected form: WordNet's morphological base forms (first base form)
        base = wn.morphy(name, letter)
        found = wn.lemmas(base, pos=letter) if base and base != name else []
    return tuple(_sense(lem) for lem in found)


def senses(lemma: str, pos: str) -> list[Sense]:
    """Senses of ``lemma`` with part of speech ``pos`` in WordNet order (first = MFS baseline).

    The lemma is matched case-insensitively with spaces as ``_``; an inflected form falls back to
    its WordNet base form (``dogs`` -> ``dog``). Returns [] for unknown lemmas and for word
    classes WordNet does not cover.
    """
    letter = wn_pos(pos)
    if letter is None or not lemma.strip():
        return []
    with _READER_LOCK:
        return list(_senses(lemma, letter, wordnet()))


def sense_inventory(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, ...]]:
    """Sense keys, in WordNet order, of every (lemma, POS) in ``pairs`` (as :func:`senses` gives them).

    Cached on disk like the parsed corpora, keyed by the pairs and the WordNet files' sizes and
    mtimes: a warm WSD run then needs no NLTK WordNet at all (its load alone takes ~4 s).
    """
    pairs = sorted(set(pairs))
    folder = data_path("nltk_data/corpora/wordnet")
    params = {
        "pairs": hashlib.sha256(json.dumps(pairs).encode()).hexdigest(),
        "files": files_fingerprint(sorted(f for f in folder.iterdir() if f.is_file())),
    }
    return cached(
        "wordnet-inventory",
        1,
        params,
        lambda: {(lemma, pos): tuple(s.key for s in senses(lemma, pos)) for lemma, pos in pairs},
    )


def first_sense_key(lemma: str, pos: str) -> str | None:
    """Key of WordNet's first sense (the MFS baseline), or None when there is none."""
    found = senses(lemma, pos)
    return found[0].key if found else None


def key_to_synset(key: str):
    """The NLTK ``Synset`` of a WordNet 3.0 sense key; UnknownSenseKeyError if it does not exist."""
    with _READER_LOCK:
        return _lemma_from_key(key).synset()


def sense_from_key(key: str) -> Sense:
    """The :class:`Sense` of a sense key; UnknownSenseKeyError if it does not exist."""
    with _READER_LOCK:
        return _sense(_lemma_from_key(key))


def _lemma_from_key(key: str):
    try:
        return wordnet().lemma_from_key(key)
    except (nltk_module().corpus.reader.wordnet.WordNetError, ValueError, KeyError, IndexError) as exc:
        raise UnknownSenseKeyError(f"{key!r} is not a WordNet 3.0 sense key") from exc
