"""WSJ readers (CoNLL-2000, Treebank sample, universal tags) against the raw zip contents."""

from __future__ import annotations

import re
import zipfile

import pytest
from nltk.tag.mapping import map_tag

from corpora import wsj
from corpora.paths import DataMissingError, setup_nltk

UNIVERSAL = {"NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X"}


def _conll_blocks(data_root, split):
    with zipfile.ZipFile(data_root / "nltk_data/corpora/conll2000.zip") as zf:
        text = zf.read(f"conll2000/{split}.txt").decode("ascii")
    return [[ln.split() for ln in block.splitlines()] for block in re.split(r"\n\s*\n", text.strip())]


@pytest.mark.parametrize("split, published", [("train", 8_936), ("test", 2_012)])
def test_conll2000_matches_the_raw_file(data_root, split, published):
    sents = wsj.load_conll2000(split)
    blocks = _conll_blocks(data_root, split)
    assert len(sents) == len(blocks) == published
    for sent, block in zip(sents, blocks):
        assert list(zip(sent.words, sent.pos, sent.chunks)) == [tuple(f) for f in block]


def test_conll2000_chunks_are_well_formed_bio():
    types = set()
    for sent in wsj.load_conll2000("test"):
        prev = "O"
        for tag in sent.chunks:
            assert tag == "O" or re.fullmatch(r"[BI]-[A-Z]+", tag)
            if tag.startswith("I-"):  # an inside tag continues a chunk of its own type
                assert prev[2:] == tag[2:]
            types.add(tag[2:])
            prev = tag
    assert {"NP", "VP", "PP"} <= types


def test_treebank_counts_and_traces(data_root):
    with zipfile.ZipFile(data_root / "nltk_data/corpora/treebank.zip") as zf:
        trees = [
            zf.read(n).decode("ascii") for n in zf.namelist() if re.fullmatch(r"treebank/combined/wsj_\d+\.mrg", n)
        ]
    n_trees = sum(len(re.findall(r"^\(\s*\(", t, re.M)) for t in trees)
    leaves = [leaf for t in trees for leaf in re.findall(r"\(([^\s()]+) ([^\s()]+)\)", t)]
    with_traces, without = wsj.load_treebank(drop_traces=False), wsj.load_treebank()
    assert len(with_traces) == len(without) == n_trees == 3_914
    assert sum(len(s.words) for s in with_traces) == len(leaves)
    assert sum(len(s.words) for s in without) == sum(1 for tag, _ in leaves if tag != "-NONE-")
    assert all("-NONE-" not in s.pos for s in without)
    assert without[0].words[:2] == ("Pierre", "Vinken") and without[0].chunks is None


def test_universal_tags_match_nltk_map_tag():
    setup_nltk()
    tags = {t for s in wsj.load_treebank(drop_traces=False) for t in s.pos}
    tags |= {t for s in wsj.load_conll2000("test") for t in s.pos}
    for tag in tags:
        assert wsj.to_universal(tag) == map_tag("en-ptb", "universal", tag)
        assert wsj.to_universal(tag) in UNIVERSAL
    assert wsj.universal_tags(["NN", "VBD", "JJ", "RB", "DT"]) == ("NOUN", "VERB", "ADJ", "ADV", "DET")


def test_bad_split_missing_and_corrupt_data(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="split"):
        wsj.load_conll2000("dev")
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match="conll2000.zip"):
        wsj.load_conll2000("train")
    corpora = tmp_path / "nltk_data/corpora"
    corpora.mkdir(parents=True)
    (corpora / "treebank.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(DataMissingError, match="treebank.zip"):
        wsj.load_treebank()
    with pytest.raises(DataMissingError, match="universal_tagset.zip"):
        wsj.to_universal("NN")


def test_a_member_damaged_inside_the_zip_is_named_not_a_zlib_traceback(data_root, tmp_path, monkeypatch):
    """60 bytes flipped inside ``test.txt``'s compressed data (the zip's directory intact) ended a POS run in
    ``zlib.error: invalid distance too far back``, which names no file; it is now the zip's DataMissingError."""
    import shutil
    import struct

    target = tmp_path / "nltk_data/corpora/conll2000.zip"
    target.parent.mkdir(parents=True)
    shutil.copy(data_root / "nltk_data/corpora/conll2000.zip", target)
    with zipfile.ZipFile(target) as zf:
        info = zf.getinfo("conll2000/test.txt")
    blob = bytearray(target.read_bytes())
    name_len, extra_len = struct.unpack("<HH", blob[info.header_offset + 26 : info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len + 2000
    blob[start : start + 60] = bytes(b ^ 0x5A for b in blob[start : start + 60])
    target.write_bytes(bytes(blob))
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match=r"conll2000\.zip.*Could not read it"):
        wsj._read_conll("test")
