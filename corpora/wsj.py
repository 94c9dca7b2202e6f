"""WSJ text with gold Penn Treebank POS tags (and chunks): CoNLL-2000 and NLTK's Treebank sample.

- :func:`load_conll2000` ``("train" | "test")``: WSJ sections 15-18 (8,936 sentences) / 20 (2,012),
  words, PTB POS and BIO chunk tags (``B-NP``, ``I-VP``, ``O``), via NLTK's ``conll2000`` reader.
- :func:`load_treebank`: the 10% Penn Treebank sample's tagged sentences (3,914). The corpus
  keeps empty elements (traces such as ``*T*-1`` and ``0``, tagged ``-NONE-``); they are not
  words anyone wrote, so they are dropped by default (``drop_traces=False`` keeps them).
- :func:`to_universal`: PTB tag -> one of the 12 universal tags (Petrov et al., 2012), from
  NLTK's ``universal_tagset`` zip (``en-ptb.map``, the table ``nltk.tag.mapping.map_tag`` uses).

Parsed sentences are cached on disk (keyed by a version and the zip's ``files_fingerprint``: size, mtime, inode,
ctime) and in memory.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from functools import lru_cache

from corpora.cache import cached, files_fingerprint
from corpora.nltk_corpora import UNREADABLE_ZIP, nltk_corpus
from corpora.paths import DataMissingError, data_path
from corpora.types import TaggedSentence

CACHE_VERSION = 1
TRACE_TAG = "-NONE-"
CONLL_SPLITS = {"train": "train.txt", "test": "test.txt"}


def _fingerprint(item: str) -> tuple:
    """Hashable ``files_fingerprint`` of a data item: keys the in-memory and on-disk caches."""
    return tuple(files_fingerprint([data_path(item)]))  # its items are tuples already


def _conll(split: str) -> tuple[TaggedSentence, ...]:
    return _conll_cached(split, _fingerprint("nltk_data/corpora/conll2000.zip"))


@lru_cache(maxsize=4)
def _conll_cached(split: str, files: tuple) -> tuple[TaggedSentence, ...]:
    return cached(
        "conll2000",
        CACHE_VERSION,
        {"split": split, "files": files},
        lambda: _read_conll(split),
        types=(TaggedSentence,),
    )


def _read_conll(split: str) -> tuple[TaggedSentence, ...]:
    try:
        sents = nltk_corpus("conll2000").iob_sents(CONLL_SPLITS[split])
        return tuple(
            TaggedSentence(
                words=tuple(w for w, _, _ in s), pos=tuple(p for _, p, _ in s), chunks=tuple(c for _, _, c in s)
            )
            for s in sents
        )
    except UNREADABLE_ZIP as exc:
        raise DataMissingError("nltk_data/corpora/conll2000.zip", f"Could not read it: {exc}.") from exc


def load_conll2000(split: str = "train") -> list[TaggedSentence]:
    """CoNLL-2000 ``"train"`` or ``"test"`` sentences with PTB POS and BIO chunk tags."""
    if split not in CONLL_SPLITS:
        raise ValueError(f"CoNLL-2000 split must be 'train' or 'test', got {split!r}")
    return list(_conll(split))


def _treebank(drop_traces: bool) -> tuple[TaggedSentence, ...]:
    return _treebank_cached(drop_traces, _fingerprint("nltk_data/corpora/treebank.zip"))


@lru_cache(maxsize=4)
def _treebank_cached(drop_traces: bool, files: tuple) -> tuple[TaggedSentence, ...]:
    params = {"drop_traces": drop_traces, "files": files}
    return cached("treebank", CACHE_VERSION, params, lambda: _read_treebank(drop_traces), types=(TaggedSentence,))


def _read_treebank(drop_traces: bool) -> tuple[TaggedSentence, ...]:
    try:
        sents = nltk_corpus("treebank").tagged_sents()
        out = []
        for s in sents:
            pairs = [(w, t) for w, t in s if not (drop_traces and t == TRACE_TAG)]
            out.append(TaggedSentence(words=tuple(w for w, _ in pairs), pos=tuple(t for _, t in pairs)))
        return tuple(out)
    except UNREADABLE_ZIP as exc:
        raise DataMissingError("nltk_data/corpora/treebank.zip", f"Could not read it: {exc}.") from exc


def load_treebank(drop_traces: bool = True) -> list[TaggedSentence]:
    """The Penn Treebank sample's 3,914 tagged sentences (``chunks`` is None).

    Args:
        drop_traces: drop ``-NONE-`` empty elements (traces, null complementizers); default True.
    """
    return list(_treebank(drop_traces))


def _universal_map() -> dict[str, str]:
    return _universal_map_cached(_fingerprint("nltk_data/taggers/universal_tagset.zip"))


@lru_cache(maxsize=2)
def _universal_map_cached(files: tuple) -> dict[str, str]:
    """PTB -> universal tags, read from the data dir's universal_tagset.zip (en-ptb.map)."""
    item = "nltk_data/taggers/universal_tagset.zip"
    try:
        with zipfile.ZipFile(data_path(item)) as zf:
            text = zf.read("universal_tagset/en-ptb.map").decode("utf-8")
    except UNREADABLE_ZIP as exc:
        raise DataMissingError(item, f"Could not read universal_tagset/en-ptb.map from it: {exc}.") from exc
    mapping = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2:
            mapping[fields[0]] = fields[1]
    if not mapping:
        raise DataMissingError(item, "Its en-ptb.map is empty.")
    return mapping


def to_universal(tag: str) -> str:
    """Universal tag of a PTB tag (``NN`` -> ``NOUN``, ``-NONE-`` -> ``X``); unknown tags -> ``X``."""
    return _universal_map().get(tag, "X")


def universal_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Universal tags of a sequence of PTB tags."""
    mapping = _universal_map()
    return tuple(mapping.get(t, "X") for t in tags)
