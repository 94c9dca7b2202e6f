"""SemCor 3.0 reader: ``semcor3.0/brown{1,2,v}/tagfiles/*`` -> :class:`SemcorSentence` lists.

The tag files are SGML-like, one element a line, unquoted attributes, latin-1::

    <s snum=1>
    <wf cmd=done pos=NN lemma=jury wnsn=1 lexsn=1:14:00::>jury</wf>
    <wf cmd=done pos=NN lemma=year wnsn=2;1 lexsn=1:28:02::;1:28:01::>year</wf>
    <punc>.</punc>
    </s>

A sense tag is ``lemma%lexsn``; a ``;`` list gives several tags (``wnsn`` lists run in parallel,
the lemma never has a list in this release). 621 of the release's adjective-satellite tags write
the head word with WordNet's syntactic marker (``lexsn=5:00:00:some(a):00``), which sense keys never
carry (``index.sense`` has ``several%5:00:00:some:00``): the marker is removed, and each such tag's
``wnsn`` equals ``index.sense``'s sense number. Tags are dropped, and counted, when ``wnsn=0`` (a
WordNet 1.6 sense with no WordNet 3.0 counterpart) or when the key is not in WordNet 3.0's
``index.sense`` (none in the release). ``brownv`` files tag verbs only: their other content words
carry no tag.

A line that cannot be parsed (a broken tag, a word outside a sentence) is skipped and counted in
``SemcorStats.malformed_lines``; it never silently becomes a token. The parsed corpus is cached
on disk, keyed by a version and ``files_fingerprint`` of the tag files and WordNet's ``index.sense`` (names, sizes,
mtimes, inodes and ctimes).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from corpora.cache import cached, files_fingerprint
from corpora.paths import DataMissingError, data_path
from corpora.types import SemcorSentence, SemcorStats, SemcorToken

CACHE_VERSION = 3  # 2: tokens interned (smaller, faster cache); 3: satellite heads' markers removed
SEMCOR_PARTS: tuple[str, ...] = ("brown1", "brown2", "brownv")

_ELEMENT = re.compile(r"^<(wf|punc)((?:\s+[a-z_]+=[^\s<>]*)*)\s*>([^<>]*)</\1>$")
_ATTR = re.compile(r"([a-z_]+)=([^\s<>]*)")
_S_OPEN = re.compile(r"^<s\s+snum=([^\s<>]+)\s*>$")
_HEAD_MARKER = re.compile(r"\((?:a|p|ip)\)(?=:[^:]*$)")  # "some(a)" in lexsn's head word: no sense key has it
_STRUCTURE = re.compile(r"^</?(contextfile|context|p)(\s+[a-z_]+=[^\s<>]+)*\s*>$")


@lru_cache(maxsize=4)
def _wordnet_keys(index_sense: Path) -> frozenset[str]:
    """Every sense key of WordNet 3.0 (first column of ``index.sense``)."""
    with open(index_sense, encoding="utf-8") as fh:
        return frozenset(line.split(" ", 1)[0] for line in fh if line.strip())


def wordnet_sense_keys() -> frozenset[str]:
    """The WordNet 3.0 sense-key set from the data dir's ``index.sense``."""
    return _wordnet_keys(data_path("nltk_data/corpora/wordnet/index.sense"))


def tagfiles(parts: Sequence[str] = SEMCOR_PARTS) -> list[Path]:
    """Sorted tag files of the given SemCor parts; DataMissingError if a part is absent/empty."""
    files: list[Path] = []
    for part in parts:
        if part not in SEMCOR_PARTS:
            raise ValueError(f"unknown SemCor part {part!r}; choose from {', '.join(SEMCOR_PARTS)}")
        folder = data_path(f"semcor3.0/{part}/tagfiles")
        found = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
        if not found:
            raise DataMissingError(f"semcor3.0/{part}/tagfiles", "The folder has no tag files.")
        files.extend(found)
    return files


# Per-token tag counts: (tagged_tokens, sense_tags, resolved_tags, dropped_wnsn0, dropped_unresolved)
_Counts = tuple[int, int, int, int, int]
_NO_TAGS: _Counts = (0, 0, 0, 0, 0)


def parse_tagfile(
    path: Path,
    doc: str,
    wn_keys: frozenset[str],
    stats: SemcorStats,
    memo: dict[str, tuple[SemcorToken | None, _Counts]] | None = None,
) -> list[SemcorSentence]:
    """Sentences of one tag file; updates ``stats`` (tokens, tags, drops, malformed lines).

    ``memo`` maps a ``<wf>``/``<punc>`` line to its parsed token: SemCor has ~87k distinct
    token lines among ~779k, so sharing it across files parses each once and interns equal
    tokens (a smaller, faster cache).
    """
    memo = {} if memo is None else memo
    sentences: list[SemcorSentence] = []
    snum: str | None = None
    tokens: list[SemcorToken] = []
    with open(path, encoding="latin-1") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if snum is not None and line.startswith(("<wf", "<punc")):
                hit = memo.get(line)
                if hit is None:
                    hit = memo[line] = _parse_token(line, wn_keys)
                tok, counts = hit
                if tok is None:
                    stats.malformed_lines += 1
                    continue
                tokens.append(tok)
                if counts is not _NO_TAGS:
                    stats.tagged_tokens += counts[0]
                    stats.sense_tags += counts[1]
                    stats.resolved_tags += counts[2]
                    stats.dropped_wnsn0 += counts[3]
                    stats.dropped_unresolved += counts[4]
                continue
            m = _S_OPEN.match(line)
            if m and snum is None:
                snum, tokens = m.group(1), []
                continue
            if line == "</s>" and snum is not None:
                sentences.append(SemcorSentence(doc=doc, snum=snum, tokens=tuple(tokens)))
                snum = None
                continue
            if snum is None and _STRUCTURE.match(line):
                continue
            stats.malformed_lines += 1
    if snum is not None:  # file ended inside a sentence: keep what was read, count the damage
        stats.malformed_lines += 1
        sentences.append(SemcorSentence(doc=doc, snum=snum, tokens=tuple(tokens)))
    stats.files += 1
    stats.sentences += len(sentences)
    stats.tokens += sum(len(s.tokens) for s in sentences)
    return sentences


def _parse_token(line: str, wn_keys: frozenset[str]) -> tuple[SemcorToken | None, _Counts]:
    """One ``<wf>``/``<punc>`` line -> (token, tag counts); token None when the line is broken."""
    m = _ELEMENT.match(line)
    if not m:
        return None, _NO_TAGS
    kind, attr_text, text = m.groups()
    if kind == "punc":
        return SemcorToken(text=text, pos=None, lemma=None), _NO_TAGS
    attrs = dict(_ATTR.findall(attr_text))
    lemma, lexsn = attrs.get("lemma"), attrs.get("lexsn")
    if lexsn is None:
        return SemcorToken(text=text, pos=attrs.get("pos"), lemma=lemma), _NO_TAGS
    lexsns = lexsn.split(";")
    wnsns = attrs.get("wnsn", "").split(";")
    if not lemma or len(wnsns) != len(lexsns) or not all(lexsns):
        return None, _NO_TAGS  # inconsistent sense attributes: a broken tag
    keys, wnsn0, unresolved = [], 0, 0
    for wnsn, lex in zip(wnsns, lexsns):
        key = f"{lemma.lower()}%{_HEAD_MARKER.sub('', lex)}"
        if wnsn == "0":
            wnsn0 += 1
        elif key not in wn_keys:
            unresolved += 1
        else:
            keys.append(key)
    token = SemcorToken(text=text, pos=attrs.get("pos"), lemma=lemma, sense_keys=tuple(keys))
    return token, (1, len(lexsns), len(keys), wnsn0, unresolved)


def _read(files: list[Path]) -> tuple[list[SemcorSentence], SemcorStats]:
    wn_keys = wordnet_sense_keys()
    stats = SemcorStats()
    sentences: list[SemcorSentence] = []
    memo: dict[str, tuple[SemcorToken | None, _Counts]] = {}
    for path in files:
        doc = f"{path.parent.parent.name}/{path.name}"
        try:
            sentences.extend(parse_tagfile(path, doc, wn_keys, stats, memo))
        except OSError as exc:
            raise DataMissingError(f"semcor3.0/{doc}", f"Could not read it: {exc}.") from exc
    return sentences, stats


def load_semcor(parts: Sequence[str] = SEMCOR_PARTS) -> tuple[list[SemcorSentence], SemcorStats]:
    """Read SemCor 3.0 (cached on disk after the first read).

    Args:
        parts: any of ``"brown1"``, ``"brown2"`` (all content words tagged) and ``"brownv"``
            (verbs only).

    Returns:
        ``(sentences, stats)``: sentences in file order, every token kept (untagged tokens have
        ``sense_keys == ()``), and the counts of files, tokens, tags, drops and malformed lines.

    Raises:
        DataMissingError: SemCor or WordNet's ``index.sense`` is missing from the data dir.
    """
    # The fingerprint lists the tag files; listing them again is needed only on a cache miss.
    sentences, stats = cached(
        "semcor",
        CACHE_VERSION,
        semcor_fingerprint(parts),
        lambda: _read(tagfiles(tuple(parts))),
        types=(SemcorSentence, SemcorToken, SemcorStats),
    )
    if stats.malformed_lines:
        _say_damaged(tuple(parts), stats.malformed_lines, stats.sentences)
    _say_unlike_release(tuple(parts), stats.files, stats.dropped_unresolved, stats.sense_tags)
    return sentences, stats


#: Tag files per part of the SemCor 3.0 release; its sense tags that WordNet 3.0's ``index.sense`` cannot resolve (of
#: all its tags: none, once the satellite heads' markers are removed), and the most share of them before a reading is
#: said to be unlike the release.
RELEASE_FILES = {"brown1": 103, "brown2": 83, "brownv": 166}
RELEASE_UNRESOLVED = (0, 234_843)
MOST_UNRESOLVED = 0.02


@lru_cache(maxsize=8)
def _say_unlike_release(parts: tuple[str, ...], files: int, unresolved: int, tags: int) -> None:
    """Tag files missing, or a WordNet that resolves far fewer of SemCor's tags than 3.0 does (a truncated or other
    ``index.sense``), change every SemCor-based number without any line being malformed: said where a run shows it."""
    log = logging.getLogger(__name__)
    expected = sum(RELEASE_FILES.get(p, 0) for p in parts)
    if files != expected:
        log.warning(
            "SemCor (%s): %d tag files read, the release has %d; results differ from SemCor 3.0's "
            "(is the copy complete? python -m probes stats shows the counts).",
            ", ".join(parts),
            files,
            expected,
        )
    if tags and unresolved > MOST_UNRESOLVED * tags:
        log.warning(
            "SemCor (%s): %d of %d sense tags (%.1f %%) are not in WordNet's index.sense, where WordNet 3.0 leaves "
            "%.2f %% unresolved: the WordNet files are not 3.0's or index.sense is cut short, and sense-based results "
            "differ from SemCor's.",
            ", ".join(parts),
            unresolved,
            tags,
            100 * unresolved / tags,
            100 * RELEASE_UNRESOLVED[0] / RELEASE_UNRESOLVED[1],
        )


@lru_cache(maxsize=8)  # once a process per reading, not on every call
def _say_damaged(parts: tuple[str, ...], lines: int, sentences: int) -> None:
    """SemCor 3.0 as released parses without a malformed line: any is a damaged or truncated tag file, whose
    sentences (and a probe's centroids) are not the corpus's. Said where a run's output shows it."""
    logging.getLogger(__name__).warning(
        "SemCor (%s): %d malformed lines skipped, %d sentences read; the release has none, so a tag file is "
        "damaged or truncated and results differ from SemCor's (python -m probes stats shows the counts).",
        ", ".join(parts),
        lines,
        sentences,
    )


def semcor_fingerprint(parts: Sequence[str] = SEMCOR_PARTS) -> dict:
    """What a cached SemCor reading depends on (parts, the tag files' and WordNet index's sizes and
    mtimes, the reader's version); also the key of caches derived from it."""
    files = tagfiles(tuple(parts))
    index = data_path("nltk_data/corpora/wordnet/index.sense")
    return {"parts": list(parts), "files": files_fingerprint(files + [index]), "reader": CACHE_VERSION}
