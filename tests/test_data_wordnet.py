"""WordNet senses: WordNet order checked against the raw index files, POS tag sets, bad input."""

from __future__ import annotations

import pytest

from corpora import wordnet as W
from corpora.paths import DataMissingError


@pytest.fixture(scope="module")
def index(data_root):
    """Raw WordNet files: index.<pos> offsets in sense order and index.sense key -> sense number."""
    folder = data_root / "nltk_data/corpora/wordnet"
    offsets = {}
    for pos_file, letter in (("index.noun", "n"), ("index.verb", "v"), ("index.adj", "a"), ("index.adv", "r")):
        for line in (folder / pos_file).read_text(encoding="utf-8").splitlines():
            if line.startswith(" "):
                continue  # licence header
            f = line.split()
            n_synsets = int(f[2])
            offsets[f[0], letter] = [int(o) for o in f[-n_synsets:]]
    sense_number = {}
    for line in (folder / "index.sense").read_text(encoding="utf-8").splitlines():
        key, _, number, _ = line.split()
        sense_number[key] = int(number)
    return offsets, sense_number


@pytest.mark.parametrize(
    "lemma, pos",
    [
        ("art", "NOUN"),
        ("run", "VERB"),
        ("good", "ADJ"),
        ("well", "ADV"),
        ("bank", "n"),
        ("light", "a"),
        ("change_ringing", "NN"),
    ],
)
def test_senses_are_in_wordnet_order(index, lemma, pos):
    offsets, sense_number = index
    found = W.senses(lemma, pos)
    letter = W.wn_pos(pos)
    assert [W.key_to_synset(s.key).offset() for s in found] == offsets[lemma, letter]
    assert [sense_number[s.key] for s in found] == list(range(1, len(found) + 1))
    assert W.first_sense_key(lemma, pos) == found[0].key
    for s in found:
        assert s.gloss and s.lexname.split(".")[0] in ("noun", "verb", "adj", "adv")
        assert s.key.split("%")[0] == lemma.lower()


def test_pos_tag_sets_agree_and_adjectives_include_satellites():
    nouns = W.senses("bank", "NOUN")
    assert W.senses("bank", "NN") == W.senses("bank", "NNS") == W.senses("bank", "n") == nouns
    adj = W.senses("good", "ADJ")
    assert W.senses("good", "JJ") == W.senses("good", "s") == adj
    assert {s.pos for s in adj} == {"a", "s"}
    assert W.senses("the", "DET") == W.senses("of", "IN") == W.senses("he", "PP") == []
    assert W.wn_pos("NP") == W.wn_pos("NN|SYM") == "n" and W.wn_pos("MD|VB") is None  # SemCor oddities
    assert W.senses("xyzzyq", "NOUN") == []
    assert W.first_sense_key("xyzzyq", "NOUN") is None
    with pytest.raises(ValueError, match="unknown POS tag"):
        W.senses("bank", "FOO")


def test_inflected_forms_and_keys():
    assert W.first_sense_key("dogs", "NNS") == W.first_sense_key("dog", "NOUN")
    assert W.first_sense_key("ran", "VBD") == W.first_sense_key("run", "VERB")
    syn = W.key_to_synset("group%1:03:00::")
    assert syn.name() == "group.n.01" and syn.lexname() == "noun.Tops"
    sense = W.sense_from_key("peculiar%5:00:00:specific:00")
    assert sense.pos == "s" and sense.lexname == "adj.all"
    for bad in ("nope%1:00:00::", "garbage", ""):
        with pytest.raises(W.UnknownSenseKeyError, match="not a WordNet 3.0 sense key"):
            W.key_to_synset(bad)


def test_missing_wordnet(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match="wordnet"):
        W.senses("bank", "NOUN")


def test_a_data_folder_made_of_links_is_read_and_a_missing_wordnet_file_is_named(data_root, tmp_path, monkeypatch):
    """NLTK refuses a file whose real path is outside its data folders, so a data folder assembled from links
    (``ln -s /data/nltk_data/corpora/wordnet mine/…``) read as "Missing or unreadable … Unauthorized path"; and a
    WordNet folder without data.noun loaded, then failed at the first lookup with a raw OSError."""
    from corpora.wsj import load_conll2000, universal_tags

    real = data_root / "nltk_data"
    mine = tmp_path / "linked" / "nltk_data"
    (mine / "corpora").mkdir(parents=True)
    for item in ("corpora/wordnet", "corpora/conll2000.zip", "taggers"):
        (mine / item).symlink_to(real / item)
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "linked"))
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    assert W.senses("bank", "NOUN")[0].key == "bank%1:17:01::"
    test = load_conll2000("test")
    assert len(test) == 2012 and universal_tags(["NN", "VBD"]) == ("NOUN", "VERB")  # a tag map in a linked folder
    partial = tmp_path / "partial" / "nltk_data" / "corpora" / "wordnet"
    partial.mkdir(parents=True)
    for f in (real / "corpora" / "wordnet").iterdir():
        if f.name != "data.noun":
            (partial / f.name).symlink_to(f)
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "partial"))
    with pytest.raises(DataMissingError, match=r"'nltk_data/corpora/wordnet/data.noun'.*needs data.noun in that"):
        W.senses("bank", "NOUN")


def test_sense_inventory_matches_senses_and_is_served_from_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    pairs = [("bank", "NOUN"), ("run", "VERB"), ("dogs", "NOUN"), ("xyzzy", "NOUN"), ("the", "DET"), ("bank", "NOUN")]
    inv = W.sense_inventory(pairs)
    assert set(inv) == set(pairs)
    for lemma, pos in pairs:
        assert inv[lemma, pos] == tuple(s.key for s in W.senses(lemma, pos))
    assert inv["bank", "NOUN"][0] == W.first_sense_key("bank", "NOUN") and inv["xyzzy", "NOUN"] == ()
    stored = list(tmp_path.glob("wordnet-inventory-v1-*.npz"))
    assert len(stored) == 1

    def no_wordnet(*args):
        raise RuntimeError("a cached inventory must not query WordNet")

    monkeypatch.setattr(W, "senses", no_wordnet)
    assert W.sense_inventory(reversed(pairs)) == inv  # same set of pairs: the same entry
    with pytest.raises(RuntimeError, match="must not query"):  # other pairs: built anew
        W.sense_inventory([("river", "NOUN")])
