"""Lexical-sample TSV reader, the framework reader on user files, and the app's upload adapter —
on small files written from real SemCor / framework data, and on every malformed input."""

from __future__ import annotations

import numpy as np
import pytest

from corpora.format_errors import DataFormatError
from corpora.lexical_sample import iter_lexical_sample, read_lexical_sample
from corpora.wsd_eval import WsdFormatError, default_key_file, read_wsd_files, write_wsd_files
from probes.tasks.wsd.data import eval_slice, semcor_slice
from viz.lexical_sample import LexicalSampleSource, UploadTooLarge
from viz.polysemy import layer_agreement, occurrence_vectors


def semcor_lexical_lines(limit: int = 300, lemmas=("man", "time", "year", "say", "make")) -> list[str]:
    """TSV lines for sense-tagged single-word tokens of a few lemmas in SemCor's first sentences,
    labelled with readable names (not WordNet keys): ``man%1:18:00::`` -> ``man.1.18.00``."""
    sentences, selected = semcor_slice(limit)
    lines = []
    for s, sel in zip(sentences, selected):
        words = [p for tok in s.tokens for p in tok.pieces]
        start = np.cumsum([0] + [len(tok.pieces) for tok in s.tokens])
        for t in sel:
            tok = s.tokens[t]
            if (tok.lemma or "").lower() in lemmas and len(tok.pieces) == 1:
                label = tok.sense_keys[0].replace("%", ".").replace(":", ".").strip(".")
                lines.append(f"{' '.join(words)}\t{start[t]}\t{label}\t{tok.lemma.lower()}")
    return lines


@pytest.fixture(scope="module")
def tsv_lines():
    lines = semcor_lexical_lines()
    assert len(lines) > 40
    return lines


def test_reader_on_real_lines(tmp_path, tsv_lines):
    path = tmp_path / "sample.tsv"
    path.write_text("sentence\tindex\tlabel\tlemma\n" + "\n".join(tsv_lines) + "\n\n# a comment\n", encoding="utf-8")
    items = list(iter_lexical_sample(path))
    assert len(items) == len(tsv_lines)
    for item, line in zip(items, tsv_lines):
        sentence, index, label, lemma = line.split("\t")
        assert item.words == tuple(sentence.split()) and item.index == int(index)
        assert item.label == label and item.lemma == lemma
    assert items[0].line == 2  # the header is line 1
    # Without the lemma column the target word, lower-cased, groups the occurrences.
    three = tmp_path / "three.tsv"
    three.write_text("The Bank closed .\t1\tFINANCE\n", encoding="utf-8")
    (item,) = read_lexical_sample(three)
    assert item.lemma == "bank" and item.target == "Bank"


@pytest.mark.parametrize(
    "content, line, message",
    [
        (b"a b c\t1\n", 1, "2 tab-separated fields; expected 3 or 4"),
        (b"ok line\t0\tX\na b c\t1\tL\tlem\textra\n", 2, "5 tab-separated fields"),
        (b"ok line\t0\tX\n\nthe bank\t2\tX\n", 3, "index 2 is out of range: the sentence has 2 words"),
        (b"the bank\t-1\tX\n", 1, "index -1 is out of range"),
        (b"the bank\tone\tX\n", 1, "'one' is not a whole number"),
        (b"the bank\t1\t\n", 1, "label '' is empty"),
        (b"   \t0\tX\n", 1, "empty sentence"),
        (b"ok line\t0\tX\nthe caf\xe9\t1\tX\n", 2, "not UTF-8 text (byte 0xe9"),
        (b"", None, "empty file: no occurrences"),
        (b"# only a comment\n\n", None, "empty file"),
    ],
)
def test_every_malformed_line_names_file_and_line(tmp_path, content, line, message):
    path = tmp_path / "bad.tsv"
    path.write_bytes(content)
    with pytest.raises(DataFormatError) as err:
        read_lexical_sample(path)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(err.value).startswith(where) and message in str(err.value)
    assert err.value.line == line


def test_framework_files_round_trip_and_their_errors(tmp_path):
    sentences = eval_slice(3)
    xml, key = write_wsd_files(sentences, tmp_path / "mini.data.xml", tmp_path / "mini.gold.key.txt")
    assert default_key_file(xml) == key
    ds = read_wsd_files(xml, key)
    assert ds.name == "mini" and ds.sentences == sentences

    # Own labels (not WordNet keys) are fine in a user's key file.
    own = tmp_path / "own.gold.key.txt"
    own.write_text(
        "".join(
            f"{line.split()[0]} SENSE{i % 3}\n" for i, line in enumerate(key.read_text(encoding="utf-8").splitlines())
        ),
        encoding="utf-8",
    )
    assert {i.gold_keys for i in read_wsd_files(xml, own).instances} == {("SENSE0",), ("SENSE1",), ("SENSE2",)}

    empty = tmp_path / "empty.data.xml"
    empty.write_bytes(b"")
    with pytest.raises(WsdFormatError, match=r"empty\.data\.xml:1: empty file"):
        read_wsd_files(empty, key)
    latin = tmp_path / "latin.data.xml"
    text = xml.read_text(encoding="utf-8").splitlines()
    latin.write_bytes(
        "\n".join(text[:6]).encode()
        + '\n<wf lemma="caf" pos="NOUN">caf\xe9</wf>\n'.encode("latin-1")
        + "\n".join(text[6:]).encode()
    )
    with pytest.raises(WsdFormatError, match=r"latin\.data\.xml:7: malformed or truncated XML"):
        read_wsd_files(latin, key)
    empty_keys = tmp_path / "empty.gold.key.txt"
    empty_keys.write_text("\n", encoding="utf-8")
    with pytest.raises(WsdFormatError, match="empty key file: no gold keys"):
        read_wsd_files(xml, empty_keys)
    bad_keys = tmp_path / "bad.gold.key.txt"
    bad_keys.write_bytes(key.read_bytes() + b"x.y.z caf\xe9\n")
    n = len(key.read_text(encoding="utf-8").splitlines())
    with pytest.raises(WsdFormatError, match=rf"bad\.gold\.key\.txt:{n + 1}: not UTF-8"):
        read_wsd_files(xml, bad_keys)
    no_instances = tmp_path / "none.data.xml"
    no_instances.write_text(
        '<corpus><text id="d"><sentence id="s"><wf lemma="a" pos="DET">a</wf></sentence></text></corpus>',
        encoding="utf-8",
    )
    with pytest.raises(WsdFormatError, match="no <instance> elements"):
        read_wsd_files(no_instances, key)


def test_a_key_file_or_a_tsv_saved_with_a_bom_or_bare_cr_reads_as_the_plain_one(tmp_path, tsv_lines):
    """A key file saved with a byte-order mark kept it on the first id ("instance … has no gold key"), and a
    lexical-sample TSV ending its lines in a bare CR read as one header line ("empty file"): the other readers
    (CoNLL-U, columns, JSONL) take both."""
    sentences = eval_slice(3)
    xml, key = write_wsd_files(sentences, tmp_path / "mini.data.xml", tmp_path / "mini.gold.key.txt")
    bom = tmp_path / "bom.gold.key.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + key.read_bytes())
    cr = tmp_path / "cr.gold.key.txt"
    cr.write_bytes(key.read_bytes().replace(b"\n", b"\r"))
    assert read_wsd_files(xml, bom).sentences == read_wsd_files(xml, cr).sentences == sentences

    plain = tmp_path / "plain.tsv"
    plain.write_text("sentence\tindex\tlabel\tlemma\n" + "\n".join(tsv_lines) + "\n", encoding="utf-8")
    mac = tmp_path / "mac.tsv"
    mac.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r"))
    assert read_lexical_sample(mac) == read_lexical_sample(plain) and len(read_lexical_sample(plain)) == len(tsv_lines)
    # a bad byte on a first line behind a byte-order mark is named as it is (the mark had shifted it by 3)
    bad = tmp_path / "bad.gold.key.txt"
    bad.write_bytes(b"\xef\xbb\xbfid ab\xffc%1:00:00::\n")
    with pytest.raises(WsdFormatError, match=r"bad\.gold\.key\.txt:1: not UTF-8 text \(byte 0xff at column 9\)"):
        read_wsd_files(xml, bad)
    bad_tsv = tmp_path / "bad.tsv"
    bad_tsv.write_bytes(b"\xef\xbb\xbfa b\xff c\t0\tx\n")
    with pytest.raises(DataFormatError, match=r"bad\.tsv:1: not UTF-8 text \(byte 0xff at column 7\)"):
        read_lexical_sample(bad_tsv)


def test_upload_adapter_gives_labelled_occurrences(tsv_lines):
    data = ("\n".join(tsv_lines) + "\n").encode("utf-8")
    source = LexicalSampleSource.from_upload(data, "my.tsv", max_mb=10)
    words = dict(source.words())
    assert sum(words.values()) == len(tsv_lines) and set(words) <= {"man", "time", "year", "say", "make"}
    word = source.words()[0][0]
    occs, total = source.occurrences(word.upper(), cap=1000)
    assert total == words[word] == len(occs)
    expected = [ln for ln in tsv_lines if ln.split("\t")[3] == word]
    for occ, line in zip(occs, expected):
        sentence, index, label, _ = line.split("\t")
        assert occ.words == tuple(sentence.split()) and (occ.start, occ.end) == (int(index), int(index) + 1)
        assert occ.group == label and occ.keys == () and occ.source.startswith("my.tsv line ")
    few, total_again = source.occurrences(word, cap=5, seed=1)
    assert total_again == total and len(few) == 5 and few == source.occurrences(word, cap=5, seed=1)[0]
    assert [o.source for o in few] == sorted((o.source for o in few), key=lambda s: int(s.split()[-1]))
    summary = source.summary()
    assert summary["occurrences"] == len(tsv_lines) and summary["targets"] == len(words)
    assert len(source.sample(3)) == 3 and "[" in source.sample(1)[0]["context"]
    everything, n = source.all_occurrences(cap=20)
    assert n == len(tsv_lines) and len(everything) == 20

    # The explorer's vectors and 1-NN agreement take these occurrences unchanged.
    rng = np.random.default_rng(0)
    X = occurrence_vectors(lambda sents: [rng.standard_normal((2, len(s), 4)) for s in sents], occs)
    assert X.shape == (2, len(occs), 4)
    assert list(layer_agreement(X, [o.group for o in occs])["layer"]) == [0, 1]


def test_upload_adapter_errors_and_sense_keys():
    with pytest.raises(DataFormatError, match=r"^up\.tsv:2: target word index 9 is out of range"):
        LexicalSampleSource.from_upload(b"a bank\t1\tX\na bank\t9\tX\n", "up.tsv", max_mb=10)
    with pytest.raises(UploadTooLarge, match="the limit is 0.0001 MB"):
        LexicalSampleSource.from_upload(b"a bank\t1\tX\n" * 100, "big.tsv", max_mb=0.0001)
    source = LexicalSampleSource.from_upload(b"the river bank\t2\tbank%1:17:01::\n", "wn.tsv", max_mb=10)
    (occ,), _ = source.occurrences("bank")
    assert occ.keys == ("bank%1:17:01::",) and occ.group == "bank%1:17:01::"
