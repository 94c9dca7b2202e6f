"""Reader for the unified WSD evaluation framework's format (Raganato, Camacho-Collados and Navigli, 2017).

A dataset is an XML file plus a gold-key file. The built-in sets are ``wsd_eval/<name>/<name>.data.xml``
and ``<name>.gold.key.txt``; any other pair in the same format (SemCor+OMSTI, a domain corpus) is read
by :func:`read_wsd_files`::

    <corpus><text id=..><sentence id=..>
      <wf lemma="the" pos="DET">The</wf>
      <instance id="senseval2.d000.s000.t000" lemma="art" pos="NOUN">art</instance> ...

    senseval2.d000.s000.t000 art%1:06:00:: art%1:04:00::        (key file: id label [label ...])

The two must agree exactly. Every problem is one :class:`WsdFormatError` (a
``corpora.format_errors.DataFormatError``) whose message starts with ``FILE:LINE:``: an instance
without a gold line, a key line for an unknown id, a duplicated id, a line without labels, malformed
or truncated XML, non-UTF-8 bytes, an empty file. The built-in sets also require WordNet sense keys
(``lemma%...``); a user's key file may hold any labels.

The XML is read as a stream (``XMLPullParser`` fed line by line, each sentence dropped once read), so
a large corpus costs memory for its sentences, not for an element tree, and every event knows its
line. Parsing ALL takes well under a second, so nothing is cached.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from corpora.format_errors import DataFormatError
from corpora.labelled import text_lines
from corpora.paths import data_path
from corpora.types import WsdDataset, WsdInstance, WsdSentence

WSD_DATASETS: tuple[str, ...] = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015", "ALL")


class WsdFormatError(DataFormatError):
    """A WSD data or key file is malformed or the two disagree: ``FILE:LINE: message``."""


def dataset_files(name: str) -> tuple[Path, Path]:
    """(data.xml, gold.key.txt) of a built-in dataset; DataMissingError when either is absent."""
    if name not in WSD_DATASETS:
        raise ValueError(f"unknown WSD dataset {name!r}; choose from {', '.join(WSD_DATASETS)}")
    return data_path(f"wsd_eval/{name}/{name}.data.xml"), data_path(f"wsd_eval/{name}/{name}.gold.key.txt")


def default_key_file(xml_path: str | Path) -> Path:
    """The framework's name for the key file of ``NAME.data.xml``: ``NAME.gold.key.txt`` beside it."""
    xml_path = Path(xml_path)
    stem = xml_path.name[: -len(".data.xml")] if xml_path.name.endswith(".data.xml") else xml_path.stem
    return xml_path.with_name(f"{stem}.gold.key.txt")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 text file as every reader of the lab reads one (``text_lines``); WsdFormatError
    naming the line of a non-UTF-8 byte."""
    with open(path, "rb") as fh:
        yield from text_lines(fh, path, WsdFormatError)


def read_gold_keys(path: str | Path, wordnet_keys: bool = True) -> dict[str, tuple[str, ...]]:
    """``id -> labels`` from a key file (one ``id label [label ...]`` line per instance).

    WsdFormatError on a line without labels, a repeated id, non-UTF-8 bytes or an empty file, and
    (``wordnet_keys``) on a label that is not a WordNet sense key.
    """
    path = Path(path)
    gold: dict[str, tuple[str, ...]] = {}
    for lineno, line in _lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            raise WsdFormatError(path, lineno, f"instance {fields[0]!r} has no sense key")
        if fields[0] in gold:
            raise WsdFormatError(path, lineno, f"instance {fields[0]!r} is listed twice")
        bad = [k for k in fields[1:] if "%" not in k] if wordnet_keys else []
        if bad:
            raise WsdFormatError(path, lineno, f"{bad[0]!r} is not a WordNet sense key")
        gold[fields[0]] = tuple(fields[1:])
    if not gold:
        raise WsdFormatError(path, None, "empty key file: no gold keys (one 'id label' line per instance)")
    return gold


def _sentence(
    sent: ET.Element, xml_path: Path, starts: dict[int, int], gold: dict, key_path: Path, seen: set[str]
) -> WsdSentence:
    """The sentence's words and instances, checked; ``starts``: each element's first line (an error names the
    element's own line, not the sentence's end where the parser stood)."""
    words, lemmas, pos, instances = [], [], [], []
    for i, el in enumerate(sent):
        line = starts.pop(id(el), starts.get(id(sent)))
        if el.tag not in ("wf", "instance"):
            raise WsdFormatError(xml_path, line, f"unexpected <{el.tag}> in sentence {sent.get('id')!r}")
        lemma, upos = el.get("lemma"), el.get("pos")
        if lemma is None or upos is None or not (el.text or "").strip():
            raise WsdFormatError(
                xml_path, line, f"<{el.tag}> #{i} of sentence {sent.get('id')!r} lacks its text, lemma or pos"
            )
        words.append(el.text)
        lemmas.append(lemma)
        pos.append(upos)
        if el.tag == "instance":
            iid = el.get("id")
            if not iid:
                raise WsdFormatError(xml_path, line, f"an instance in sentence {sent.get('id')!r} has no id")
            if iid not in gold:
                raise WsdFormatError(xml_path, line, f"instance {iid!r} has no gold key in {key_path}")
            if iid in seen:
                raise WsdFormatError(xml_path, line, f"instance id {iid!r} occurs twice")
            seen.add(iid)
            instances.append(WsdInstance(id=iid, index=i, lemma=lemma, pos=upos, gold_keys=gold[iid]))
    return WsdSentence(
        id=sent.get("id", ""), words=tuple(words), lemmas=tuple(lemmas), pos=tuple(pos), instances=tuple(instances)
    )


def iter_wsd_sentences(
    xml_path: str | Path, gold: dict[str, tuple[str, ...]], key_path: str | Path, seen: set[str] | None = None
) -> Iterator[WsdSentence]:
    """The sentences of a framework XML file, streamed; ``seen`` collects the instance ids read."""
    xml_path, key_path = Path(xml_path), Path(key_path)
    seen = set() if seen is None else seen
    parser = ET.XMLPullParser(events=("start", "end"))
    open_elements: list[ET.Element] = []
    starts: dict[int, int] = {}  # id(element) -> the line its start tag ended on, while its sentence is read
    lineno = 0
    try:
        with open(xml_path, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                parser.feed(raw)
                for event, el in parser.read_events():
                    if event == "start":
                        open_elements.append(el)
                        starts[id(el)] = lineno
                        continue
                    open_elements.pop()
                    if el.tag == "sentence":
                        yield _sentence(el, xml_path, starts, gold, key_path, seen)
                        starts.clear()  # the sentence is done (and the text and document around it need none)
                        if open_elements:  # drop it: memory stays bounded by one sentence
                            open_elements[-1].remove(el)
            parser.close()
    except ET.ParseError as exc:
        line, col = exc.position
        what = (
            "empty file"
            if lineno == 0 or (line <= 1 and "no element found" in str(exc))
            else "malformed or truncated XML"
        )
        raise WsdFormatError(xml_path, line or lineno, f"{what} at line {line}, column {col} ({exc})") from None


def read_wsd_files(
    xml_path: str | Path, key_path: str | Path, name: str | None = None, wordnet_keys: bool = False
) -> WsdDataset:
    """Any data/key file pair in the framework's format (``wordnet_keys``: labels must be sense keys).

    ``name`` defaults to the XML file's name without ``.data.xml``. Raises WsdFormatError (see the
    module docstring), and when the XML has no instance at all.
    """
    xml_path, key_path = Path(xml_path), Path(key_path)
    gold = read_gold_keys(key_path, wordnet_keys=wordnet_keys)
    seen: set[str] = set()
    sentences = list(iter_wsd_sentences(xml_path, gold, key_path, seen))
    if not seen:
        raise WsdFormatError(xml_path, None, "no <instance> elements: nothing to train on or evaluate")
    if len(seen) != len(gold):
        for lineno, line in _lines(key_path):
            fields = line.split()
            if fields and fields[0] not in seen:
                raise WsdFormatError(key_path, lineno, f"unknown instance id {fields[0]!r} (not in {xml_path})")
    if name is None:
        name = default_key_file(xml_path).name[: -len(".gold.key.txt")]
    return WsdDataset(name=name, sentences=sentences)


def write_wsd_files(
    sentences: Iterable[WsdSentence], xml_path: str | Path, key_path: str | Path, corpus: str = ""
) -> tuple[Path, Path]:
    """Write sentences in the framework's format (one element a line; ``read_wsd_files`` reads them back)."""
    xml_path, key_path = Path(xml_path), Path(key_path)
    with open(xml_path, "w", encoding="utf-8") as xml, open(key_path, "w", encoding="utf-8") as keys:
        xml.write(
            f'<?xml version="1.0" encoding="UTF-8" ?>\n<corpus lang="en" source={quoteattr(corpus)}>\n'
            f'<text id="d000">\n'
        )
        for s in sentences:
            xml.write(f"<sentence id={quoteattr(s.id)}>\n")
            by_index = {inst.index: inst for inst in s.instances}
            for i, (word, lemma, pos) in enumerate(zip(s.words, s.lemmas, s.pos)):
                inst = by_index.get(i)
                attrs = f"lemma={quoteattr(lemma)} pos={quoteattr(pos)}"
                if inst is None:
                    xml.write(f"<wf {attrs}>{escape(word)}</wf>\n")
                else:
                    xml.write(f"<instance id={quoteattr(inst.id)} {attrs}>{escape(word)}</instance>\n")
                    keys.write(" ".join((inst.id, *inst.gold_keys)) + "\n")
            xml.write("</sentence>\n")
        xml.write("</text>\n</corpus>\n")
    return xml_path, key_path


def parse_wsd_files(name: str, xml_path: Path, key_path: Path) -> WsdDataset:
    """One built-in data/key file pair (WordNet sense keys required)."""
    return read_wsd_files(xml_path, key_path, name=name, wordnet_keys=True)


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
