"""SemCor 3.0 reader: counts checked against the raw tag files, WordNet agreement, broken input."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from corpora import semcor as S
from corpora.paths import DataMissingError
from corpora.wordnet import UnknownSenseKeyError, key_to_synset, sense_from_key


@pytest.fixture(scope="session")
def semcor():
    return S.load_semcor()


@pytest.fixture(scope="session")
def raw_counts(data_root):
    """Counts taken straight from the files with regexes, independent of the reader."""
    keys = {
        ln.split(" ", 1)[0]
        for ln in (data_root / "nltk_data/corpora/wordnet/index.sense").read_text(encoding="utf-8").splitlines()
    }
    files = sorted((data_root / "semcor3.0").glob("brown*/tagfiles/*"))
    c = dict(files=len(files), sentences=0, tokens=0, tagged=0, tags=0, wnsn0=0, resolved=0, marked=0, sense_no=0)
    sense_numbers = {
        ln.split(" ")[0]: ln.split(" ")[2]
        for ln in (data_root / "nltk_data/corpora/wordnet/index.sense").read_text(encoding="utf-8").splitlines()
    }
    for f in files:
        text = f.read_text(encoding="latin-1")
        c["sentences"] += len(re.findall(r"^<s snum=", text, re.M))
        c["tokens"] += len(re.findall(r"^<(?:wf|punc)\b", text, re.M))
        for lemma, wnsn, lexsn in re.findall(r"lemma=(\S+) wnsn=(\S+) lexsn=([^\s>]+)", text):
            c["tagged"] += 1
            for w, lex in zip(wnsn.split(";"), lexsn.split(";")):
                c["tags"] += 1
                c["wnsn0"] += w == "0"
                # WordNet's sense keys never carry the adjective markers SemCor writes in 621 satellite heads
                key = f"{lemma}%{re.sub(r'[(](a|p|ip)[)]', '', lex)}"
                c["resolved"] += w != "0" and key in keys
                c["marked"] += w != "0" and "(" in lex and key in keys
                c["sense_no"] += w != "0" and key in keys and sense_numbers[key] == w
    return c


def test_counts_match_the_raw_files(semcor, raw_counts):
    sentences, st = semcor
    assert st.files == raw_counts["files"] == 352
    assert st.sentences == len(sentences) == raw_counts["sentences"]
    assert st.tokens == sum(len(s.tokens) for s in sentences) == raw_counts["tokens"]
    assert st.tagged_tokens == raw_counts["tagged"]
    assert st.sense_tags == raw_counts["tags"] == 234_843  # published count
    # 226,074 without the 621 satellite tags whose head word carries a marker ("some(a)"), as read before 2026-12-07
    assert st.resolved_tags == raw_counts["resolved"] == 226_695 and raw_counts["marked"] == 621
    assert raw_counts["sense_no"] == raw_counts["resolved"]  # every resolved tag's wnsn is WordNet's sense number
    assert st.dropped_unresolved == 0
    assert st.dropped_wnsn0 == raw_counts["wnsn0"]
    assert st.resolved_tags + st.dropped_wnsn0 + st.dropped_unresolved == st.sense_tags
    assert st.malformed_lines == 0
    assert sum(len(t.sense_keys) for s in sentences for t in s.tokens) == st.resolved_tags


def test_tokens_keep_multiwords_and_brownv_tags_only_verbs(semcor):
    sentences, _ = semcor
    first = sentences[0]
    assert first.doc == "brown1/br-a01" and first.snum == "1"
    jury = first.tokens[1]
    assert jury.text == "Fulton_County_Grand_Jury" and jury.pieces == ["Fulton", "County", "Grand", "Jury"]
    assert jury.sense_keys == ("group%1:03:00::",) and jury.pos == "NNP"
    assert first.tokens[-1].text == "." and first.tokens[-1].pos is None
    brownv = [t for s in sentences if s.doc.startswith("brownv/") for t in s.tokens if t.sense_keys]
    assert len(brownv) > 10_000 and all(t.pos.startswith("VB") for t in brownv)
    assert any(len(t.sense_keys) == 2 for s in sentences for t in s.tokens)  # ';' lists kept


def test_kept_and_dropped_keys_agree_with_nltk_wordnet(semcor, data_root):
    sentences, _ = semcor
    kept = sorted({k for s in sentences for t in s.tokens for k in t.sense_keys})
    for key in random.Random(0).sample(kept, 200):
        assert sense_from_key(key).key == key
    # Keys dropped as unresolved (wnsn != 0, not in index.sense) are unknown to NLTK as well.
    keys = S.wordnet_sense_keys()
    dropped = []
    for f in sorted((data_root / "semcor3.0").glob("brown*/tagfiles/*")):
        text = f.read_text(encoding="latin-1")
        for lemma, _wnsn, lexsn in re.findall(r"lemma=(\S+) wnsn=([1-9]\d*) lexsn=([^\s;>]+)>", text):
            if f"{lemma}%{lexsn}" not in keys:
                dropped.append(f"{lemma}%{lexsn}")
        if len(dropped) >= 20:
            break
    assert dropped
    for key in dropped[:20]:
        with pytest.raises(UnknownSenseKeyError):
            key_to_synset(key)


INDEX_SENSE = "jury%1:14:00:: 08374049 1 12\nsay%2:32:00:: 00928630 1 500\n"
GOOD = """<contextfile concordance=brown>
<context filename=br-x01 paras=yes>
<p pnum=1>
<s snum=1>
<wf cmd=ignore pos=DT>The</wf>
<wf cmd=done pos=NN lemma=jury wnsn=1 lexsn=1:14:00::>jury</wf>
<wf cmd=done pos=VB lemma=say wnsn=1;0 lexsn=2:32:00::;2:32:07::>said</wf>
<wf cmd=done pos=NN lemma=cat wnsn=2 lexsn=1:05:09::>cat</wf>
<punc>.</punc>
</s>
{extra}</p>
</context>
</contextfile>
"""


def _fake_data(root: Path, extra: str = "") -> Path:
    tagdir = root / "semcor3.0/brown1/tagfiles"
    tagdir.mkdir(parents=True)
    (tagdir / "br-x01").write_text(GOOD.format(extra=extra), encoding="latin-1")
    wn = root / "nltk_data/corpora/wordnet"
    wn.mkdir(parents=True)
    (wn / "index.sense").write_text(INDEX_SENSE, encoding="utf-8")
    return tagdir / "br-x01"


@pytest.fixture()
def fake_env(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_small_file_tags_and_drops(fake_env):
    _fake_data(fake_env / "data")
    sents, st = S.load_semcor(parts=("brown1",))
    assert [t.text for t in sents[0].tokens] == ["The", "jury", "said", "cat", "."]
    assert [t.sense_keys for t in sents[0].tokens] == [(), ("jury%1:14:00::",), ("say%2:32:00::",), (), ()]
    assert (st.sense_tags, st.resolved_tags, st.dropped_wnsn0, st.dropped_unresolved) == (4, 2, 1, 1)
    assert st.malformed_lines == 0


@pytest.mark.parametrize(
    "broken",
    [
        "<wf cmd=done pos=NN lemma=jury wnsn=1 lexsn=1:14:00::>jury\n",  # no closing tag
        "<wf cmd=done pos=NN lemma=jury wnsn=1;2 lexsn=1:14:00::>jury</wf>\n",  # wnsn/lexsn lists disagree
        "<wf cmd=done pos=NN lemma=jury wnsn=1 lexsn=1:14:00::jury</wf>\n",  # unterminated start tag
        "<s snum=2>\n<wf cmd=done pos=NN lemma=jury wnsn=1 lexsn=1:14:00::>jury</wf>\n<s snum=3>\n</s>\n",  # nested <s>
    ],
)
def test_broken_tag_is_a_counted_skip(fake_env, broken, caplog):
    path = _fake_data(fake_env / "data")
    path.write_text(GOOD.format(extra="").replace("<punc>.</punc>\n", "<punc>.</punc>\n" + broken), encoding="latin-1")
    S._say_damaged.cache_clear()
    sents, st = S.load_semcor(parts=("brown1",))
    assert st.malformed_lines >= 1
    # a probe reading it says so (a truncated tag file had changed WSD's centroids with nothing said)
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "malformed" in r.getMessage()]
    assert len(said) == 1 and f"{st.malformed_lines} malformed lines skipped" in said[0] and "truncated" in said[0]
    S.load_semcor(parts=("brown1",))
    assert len([r for r in caplog.records if "malformed" in r.getMessage()]) == 1  # once a process
    assert "jury" in [t.text for t in sents[0].tokens]  # the good tokens are still there
    assert sum(t.text == "jury" for s in sents for t in s.tokens) <= 2
    assert st.resolved_tags == sum(len(t.sense_keys) for s in sents for t in s.tokens)


def test_a_copy_unlike_the_release_is_said(fake_env, data_root, monkeypatch, caplog):
    """A SemCor copy missing 344 of its 352 tag files, or read with a WordNet whose index.sense was cut to half (115,956
    tags dropped "not in WN 3.0"), ran without a word and changed every WSD number. Said where a run shows it; the
    release itself says nothing."""
    _fake_data(fake_env / "data")  # one brown1 tag file; one of its four tags is not in the fake index.sense
    S._say_unlike_release.cache_clear()
    S.load_semcor(parts=("brown1",))
    said = " | ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "1 tag files read, the release has 103" in said and "1 of 4 sense tags (25.0 %) are not in WordNet" in said
    caplog.clear()
    monkeypatch.setenv("EMBPROBE_DATA", str(data_root))
    S._say_unlike_release.cache_clear()
    S.load_semcor()
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_cache_rebuilds_when_corrupt_or_file_changes(fake_env):
    path = _fake_data(fake_env / "data")
    first = S.load_semcor(parts=("brown1",))
    entries = list((fake_env / "cache").glob("semcor-*.npz"))
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:100])  # truncated entry
    assert S.load_semcor(parts=("brown1",)) == first
    path.write_text(GOOD.format(extra="").replace(">jury<", ">juries<"), encoding="latin-1")
    sents, _ = S.load_semcor(parts=("brown1",))
    assert sents[0].tokens[1].text == "juries"


def test_missing_data_and_bad_part(fake_env):
    (fake_env / "data").mkdir()
    with pytest.raises(DataMissingError, match="semcor3.0"):
        S.load_semcor()
    with pytest.raises(ValueError, match="unknown SemCor part"):
        S.load_semcor(parts=("brown3",))
