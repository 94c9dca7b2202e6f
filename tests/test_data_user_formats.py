"""Readers of a user's files: CoNLL-U, column files, edge-probing JSON lines — real slices and bad input.

Every malformed file gives one DataFormatError whose message starts with ``FILE:LINE:`` (or
``FILE:`` for the whole file); multiword-token ranges and empty nodes are skipped, as CoNLL-U defines.
"""

from __future__ import annotations

import json
from itertools import islice

import pytest

from corpora.columns import iter_columns
from corpora.conllu import iter_conllu
from corpora.edge_probing import iter_edge_probing
from corpora.format_errors import DataFormatError

# A tiny treebank sample written for these tests: a multiword token (can't = ca + n't), an empty node
# (8.1-style, here 2.1), comments, FEATS and MISC.
TINY = """# sent_id = 1
# text = I can't go.
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing|Person=1\t3\tnsubj\t3:nsubj\t_
2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
2\tca\tcan\tAUX\tMD\tVerbForm=Fin\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\t_
4\tgo\tgo\tVERB\tVB\tVerbForm=Inf\t0\troot\t0:root\tSpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_

# sent_id = 2
1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t2:nsubj\t_
2\tbark\tbark\tVERB\tVBP\tMood=Ind|Number=Plur\t0\troot\t0:root\t_
"""


def write(tmp_path, name: str, text: str | bytes):
    path = tmp_path / name
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def error_of(fn, *args) -> DataFormatError:
    with pytest.raises(DataFormatError) as exc:
        list(fn(*args))
    return exc.value


# ------------------------------------------------------------------------------------------- CoNLL-U


def test_conllu_columns_and_multiword_tokens(tmp_path):
    path = write(tmp_path, "tiny.conllu", TINY)
    a, b = iter_conllu(path, "UPOS")
    assert a.words == ("I", "ca", "n't", "go", ".") and a.labels == ("PRON", "AUX", "PART", "VERB", "PUNCT")
    assert a.line == 3 and b.words == ("Dogs", "bark")
    assert [s.labels for s in iter_conllu(path, "xpos")] == [("PRP", "MD", "RB", "VB", "."), ("NNS", "VBP")]
    assert next(iter_conllu(path, "DEPREL")).labels == ("nsubj", "aux", "advmod", "root", "punct")
    assert [s.labels for s in iter_conllu(path, "feats:Number")] == [("Sing", "_", "_", "_", "_"), ("Plur", "Plur")]
    assert next(iter_conllu(path, "misc:SpaceAfter")).labels == ("_", "_", "_", "No", "_")


def test_conllu_real_treebank_slice(data_root):
    path = data_root / "ud_english_ewt" / "en_ewt-ud-dev.conllu"
    sents = list(islice(iter_conllu(path, "UPOS"), 50))
    assert len(sents) == 50 and all(len(s.words) == len(s.labels) > 0 for s in sents)
    assert set(t for s in sents for t in s.labels) <= {
        "ADJ",
        "ADP",
        "ADV",
        "AUX",
        "CCONJ",
        "DET",
        "INTJ",
        "NOUN",
        "NUM",
        "PART",
        "PRON",
        "PROPN",
        "PUNCT",
        "SCONJ",
        "SYM",
        "VERB",
        "X",
    }
    # The whole dev file streams through: 2,001 sentences (the treebank's README).
    assert sum(1 for _ in iter_conllu(path, "DEPREL")) == 2001


@pytest.mark.parametrize(
    "text, line, message",
    [
        (TINY.replace("1\tDogs\tdog\tNOUN", "1\tDogs\tNOUN"), 12, "expected 10 tab-separated fields"),
        (TINY.replace("2\tbark", "x\tbark"), 13, "bad word ID 'x'"),
        (TINY.replace("2\tbark", "3\tbark"), 13, "word ID 3 follows word 1"),
        (TINY.replace("2-3\tcan't", "2-x\tcan't"), 4, "bad word ID"),
        (TINY.replace("2-3\tcan't", "3-2\tcan't"), 4, "a multiword token spans words lo-hi"),
        (TINY.replace("Number=Plur\t2", "Plural\t2"), 12, "bad FEATS/MISC item 'Plural'"),
        # UD writes "_" for no value: an empty field was read as the label "" and a spaces-only FORM as a word
        (TINY.replace("NNS\tNumber=Plur\t", "NNS\t\t"), 12, "empty FEATS field: CoNLL-U writes '_'"),  # the one read
        (TINY.replace("1\tDogs\t", "1\t \t"), 12, "empty FORM field (or spaces only)"),
    ],
)
def test_conllu_malformed_lines_name_the_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.conllu", text)
    err = error_of(iter_conllu, path, "feats:Number")
    assert err.line == line and message in str(err) and str(err).startswith(f"{path}:{line}: ")


def test_conllu_whole_file_problems(tmp_path):
    tiny = write(tmp_path, "tiny.conllu", TINY)
    assert "no label column 'FORMS'" in str(error_of(iter_conllu, tiny, "FORMS"))
    err = error_of(iter_conllu, tiny, "feats:Tense")
    assert err.line is None and "no word has a value in label column 'feats:Tense'" in str(err)
    assert "keys present: Case, Mood, Number, Person, VerbForm" in str(err)
    assert "the file is empty" in str(error_of(iter_conllu, write(tmp_path, "empty.conllu", ""), "UPOS"))
    assert "no sentences" in str(error_of(iter_conllu, write(tmp_path, "c.conllu", "# only a comment\n\n"), "UPOS"))
    bad = write(tmp_path, "latin1.conllu", TINY.encode().replace(b"Dogs", b"D\xf6gs"))
    err = error_of(iter_conllu, bad, "UPOS")
    assert err.line == 12 and "not UTF-8" in str(err) and "0xf6" in str(err)
    # old Mac line endings (a bare CR): read as one comment line, "no sentences"; now the same sentences
    mac = write(tmp_path, "mac.conllu", TINY.replace("\n", "\r"))
    assert list(iter_conllu(mac, "UPOS")) == list(iter_conllu(tiny, "UPOS"))
    # and a bad byte in it is named at its own line and column, as in the LF file
    mac_bad = write(tmp_path, "mac_bad.conllu", TINY.encode().replace(b"Dogs", b"D\xf6gs").replace(b"\n", b"\r"))
    err = error_of(iter_conllu, mac_bad, "UPOS")
    assert err.line == 12 and "byte 0xf6 at column 4" in str(err), str(err)
    # an empty field the reader does not use (a stray tab leaving MISC empty) breaks nothing
    stray = write(tmp_path, "stray.conllu", TINY.replace("\tnsubj\t2:nsubj\t_", "\tnsubj\t2:nsubj\t"))
    assert stray.read_text() != TINY and list(iter_conllu(stray, "UPOS")) == list(iter_conllu(tiny, "UPOS"))


# ------------------------------------------------------------------------------------- column files


def test_columns_conll2000_style_with_docstart_and_tabs(tmp_path):
    text = "-DOCSTART- -X- O O\n\nEU NNP B-NP\nrejects VBZ B-VP\n\nPeter NNP B-NP\n"
    path = write(tmp_path, "ner.txt", text)
    a, b = iter_columns(path, 1)
    assert a.words == ("EU", "rejects") and a.labels == ("NNP", "VBZ") and a.line == 3 and b.line == 6
    assert [s.labels for s in iter_columns(path, -1)] == [("B-NP", "B-VP"), ("B-NP",)]
    tabbed = write(tmp_path, "t.tsv", "New York\tNNP\nis\tVBZ\n")
    assert next(iter_columns(tabbed, 1)).words == ("New York", "is")


def test_columns_bad_input(tmp_path):
    path = write(tmp_path, "c.txt", "EU NNP B-NP\nrejects VBZ\n")
    err = error_of(iter_columns, path, 1)
    assert err.line == 2 and "2 field(s), but the first token line (line 1) has 3" in str(err)
    err = error_of(iter_columns, write(tmp_path, "d.txt", "EU NNP\n"), 4)
    assert err.line == 1 and "no label column 4: the lines have 2 field(s)" in str(err)
    assert "the file is empty" in str(error_of(iter_columns, write(tmp_path, "e.txt", ""), 1))
    assert "no sentences" in str(error_of(iter_columns, write(tmp_path, "f.txt", "\n\n-DOCSTART- O\n"), 1))
    assert "is the word column" in str(error_of(iter_columns, write(tmp_path, "g.txt", "a b\n"), -2))
    assert "not UTF-8" in str(error_of(iter_columns, write(tmp_path, "h.txt", b"a b\n\xff\xfe c\n"), 1))


def test_a_conllu_file_read_as_columns_is_refused_not_embedded_as_token_ids(tmp_path):
    """A CoNLL-U file not named *.conllu was read as a column file: the model embedded "1 2 3 …" (and "2-3") and the
    tag probe scored 14.78 where the file read as CoNLL-U gives 62.60, exit 0."""
    bare = write(tmp_path, "tiny.conll", "".join(line + "\n" for line in TINY.splitlines() if not line.startswith("#")))
    err = error_of(iter_columns, bare, 3)
    assert err.line == 1 and "holds 1 2-3 2 3 …: token IDs" in str(err) and "--format conllu" in str(err)
    assert next(iter_columns(bare, 3, word_column=1)).words == ("I", "can't", "ca", "n't", "go", "go", ".")
    # a two-column file whose first sentence is numbers counting from 1 is words (it was refused as token IDs)
    numbers = write(tmp_path, "n.txt", "1 CD\n2 CD\n3 CD\n\n3 CD\n4 CD\n")
    assert [s.words for s in iter_columns(numbers, 1)] == [("1", "2", "3"), ("3", "4")]
    # a CoNLL-U file whose first token is a contraction's range (Spanish, French UD: "1-2 del") is caught too
    spanish = (
        "".join(
            "\t".join(row) + "\n"
            for row in (["1-2", "del", *"_" * 8], ["1", "de", "de", "ADP", "_", "_", "0", "root", "_", "_"])
        )
        + "2\tel\tel\tDET\t_\t_\t1\tdet\t_\t_\n"
    )
    assert "token IDs" in str(error_of(iter_columns, write(tmp_path, "es.conll", spanish), 3))


# ---------------------------------------------------------------------------------- edge probing


def test_edge_probing_spans_and_pairs(tmp_path):
    lines = [
        {
            "text": "The cat sat .",
            "targets": [{"span1": [0, 2], "label": "NP"}, {"span1": [2, 3], "label": ["VP"]}],
            "info": {"source": "x"},
        },
        {"text": "Dogs bark", "targets": []},
    ]
    path = write(tmp_path, "e.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    a, b = iter_edge_probing(path)
    assert a.words == ("The", "cat", "sat", ".") and [t.label for t in a.targets] == ["NP", "VP"]
    assert a.targets[0].span1 == (0, 2) and a.targets[0].span2 is None and b.line == 2 and b.targets == ()
    pair = write(
        tmp_path,
        "p.jsonl",
        json.dumps({"text": "a b c", "targets": [{"span1": [0, 1], "span2": [2, 3], "label": "nsubj"}]}),
    )
    (s,) = iter_edge_probing(pair)
    assert s.targets[0].span2 == (2, 3)


@pytest.mark.parametrize(
    "record, message",
    [
        ({"text": "a b", "targets": [{"span1": [1, 3], "label": "X"}]}, "span1 [1, 3) is out of range for a text of 2"),
        ({"text": "a b", "targets": [{"span1": [1, 1], "label": "X"}]}, "span1 [1, 1) is out of range"),
        (
            {"text": "a b", "targets": [{"span1": [0, 1], "span2": [-1, 1], "label": "X"}]},
            "span2 [-1, 1) is out of range",
        ),
        ({"text": "a b", "targets": [{"span1": "0 1", "label": "X"}]}, "span1 must be [start, end]"),
        ({"text": "a b", "targets": [{"span1": [0, 1]}]}, "each target needs 'span1' and 'label'"),
        ({"text": "a b", "targets": [{"span1": [0, 1], "label": ["X", "Y"]}]}, "has 2 labels"),
        ({"targets": []}, "'text' must be a non-empty string"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_edge_probing_bad_records_name_the_line(tmp_path, record, message):
    good = json.dumps({"text": "a", "targets": [{"span1": [0, 1], "label": "X"}]})
    path = write(tmp_path, "bad.jsonl", good + "\n" + json.dumps(record) + "\n")
    err = error_of(iter_edge_probing, path)
    assert err.line == 2 and message in str(err), str(err)


def test_edge_probing_whole_file_problems(tmp_path):
    assert "not JSON" in str(error_of(iter_edge_probing, write(tmp_path, "a.jsonl", '{"text": "a",\n')))
    assert "no targets" in str(
        error_of(iter_edge_probing, write(tmp_path, "b.jsonl", '{"text": "a", "targets": []}\n'))
    )
    mixed = [
        {"text": "a b", "targets": [{"span1": [0, 1], "label": "X"}]},
        {"text": "a b", "targets": [{"span1": [0, 1], "span2": [1, 2], "label": "X"}]},
    ]
    err = error_of(iter_edge_probing, write(tmp_path, "c.jsonl", "\n".join(map(json.dumps, mixed))))
    assert err.line == 2 and "either single spans or span pairs" in str(err)
