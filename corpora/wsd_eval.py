"""Reader for the unified WSD evaluation framework (Raganato, Camacho-Collados and Navigli, 2017).

Each dataset is ``wsd_eval/<name>/<name>.data.xml``::

    <corpus><text id=..><sentence id=..>
      <wf lemma="the" pos="DET">The</wf>
      <instance id="senseval2.d000.s000.t000" lemma="art" pos="NOUN">art</instance> ...

plus ``<name>.gold.key.txt`` with one line ``id key [key ...]`` per instance. The two must agree
exactly: an instance without a gold line, a key line for an unknown id, a duplicated id or a
line without keys raises :class:`WsdFormatError` naming the file (and line); unparsable or
truncated XML raises it naming the file and position. Parsing ALL takes well under a second,
so nothing is cached.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from corpora.types import WsdDataset, WsdInstance, WsdSentence
from corpora.paths import data_path

WSD_DATASETS: tuple[str, ...] = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015", "ALL")


class WsdFormatError(ValueError):
    """A WSD data or key file is malformed or the two disagree. The message names the file."""


def dataset_files(name: str) -> tuple[Path, Path]:
    """(data.xml, gold.key.txt) of a dataset; DataMissingError when either is absent."""
    if name not in WSD_DATASETS:
        raise ValueError(f"unknown WSD dataset {name!r}; choose from {', '.join(WSD_DATASETS)}")
    return data_path(f"wsd_eval/{name}/{name}.data.xml"), data_path(f"wsd_eval/{name}/{name}.gold.key.txt")


def read_gold_keys(path: Path) -> dict[str, tuple[str, ...]]:
    """``id -> keys`` from a key file; WsdFormatError on a line without keys or a repeated id."""
    gold: dict[str, tuple[str, ...]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 2:
                raise WsdFormatError(f"{path}, line {lineno}: instance {fields[0]!r} has no sense key")
            if fields[0] in gold:
                raise WsdFormatError(f"{path}, line {lineno}: instance {fields[0]!r} is listed twice")
            bad = [k for k in fields[1:] if "%" not in k]
            if bad:
                raise WsdFormatError(f"{path}, line {lineno}: {bad[0]!r} is not a WordNet sense key")
            gold[fields[0]] = tuple(fields[1:])
    return gold


def parse_wsd_files(name: str, xml_path: Path, key_path: Path) -> WsdDataset:
    """Parse one data/key file pair (used by :func:`load_wsd_dataset`; handy for tests)."""
    gold = read_gold_keys(key_path)
    try:
        root = ET.parse(xml_path).getroot()
    except ET.ParseError as exc:
        line, col = exc.position
        raise WsdFormatError(f"{xml_path}: malformed or truncated XML at line {line}, column {col} ({exc})") from exc

    sentences: list[WsdSentence] = []
    seen: set[str] = set()
    for sent in root.iter("sentence"):
        words, lemmas, pos, instances = [], [], [], []
        for i, el in enumerate(sent):
            if el.tag not in ("wf", "instance"):
                raise WsdFormatError(f"{xml_path}: unexpected <{el.tag}> in sentence {sent.get('id')!r}")
            lemma, upos = el.get("lemma"), el.get("pos")
            if lemma is None or upos is None or el.text is None:
                raise WsdFormatError(
                    f"{xml_path}: <{el.tag}> #{i} of sentence {sent.get('id')!r} lacks its text, lemma or pos")
            words.append(el.text)
            lemmas.append(lemma)
            pos.append(upos)
            if el.tag == "instance":
                iid = el.get("id")
                if not iid:
                    raise WsdFormatError(f"{xml_path}: an instance in sentence {sent.get('id')!r} has no id")
                if iid not in gold:
                    raise WsdFormatError(f"{xml_path}: instance {iid!r} has no gold key in {key_path}")
                if iid in seen:
                    raise WsdFormatError(f"{xml_path}: instance id {iid!r} occurs twice")
                seen.add(iid)
                instances.append(WsdInstance(id=iid, index=i, lemma=lemma, pos=upos, gold_keys=gold[iid]))
        sentences.append(WsdSentence(id=sent.get("id", ""), words=tuple(words), lemmas=tuple(lemmas),
                                     pos=tuple(pos), instances=tuple(instances)))

    if len(seen) != len(gold):
        with open(key_path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                fields = line.split()
                if fields and fields[0] not in seen:
                    raise WsdFormatError(f"{key_path}, line {lineno}: unknown instance id {fields[0]!r} "
                                         f"(not in {xml_path})")
    return WsdDataset(name=name, sentences=sentences)


def load_wsd_dataset(name: str) -> WsdDataset:
    """Load one evaluation set (``WSD_DATASETS``): sentences with every word, lemma and universal
    POS, and the instances to disambiguate with their gold WordNet 3.0 keys.

    Raises:
        ValueError: unknown dataset name.
        DataMissingError: the dataset's files are not in the data dir.
        WsdFormatError: malformed XML/key file, or the two disagree.
    """
    xml_path, key_path = dataset_files(name)
    return parse_wsd_files(name, xml_path, key_path)
