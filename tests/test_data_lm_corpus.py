"""LM corpus: real WikiText/NLTK text, deterministic split, vocabulary, cache and bad input."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from corpora import lm_corpus as L, lm_sources
from corpora.paths import DataMissingError


@pytest.fixture()
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_wikitext_valid_matches_the_raw_file(data_root, tmp_cache):
    raw = (data_root / L.WIKITEXT_SOURCES["wikitext103-valid"]).read_text(encoding="utf-8").splitlines()
    body = [ln for ln in raw if ln.strip() and not re.match(r"^\s*(= )+.*( =)+\s*$", ln)]
    corpus = L.load_lm_corpus(("wikitext103-valid",), min_count=1, heldout_fraction=0.05)
    tokens = [t for s in corpus.train + corpus.heldout for t in s]

    # Joining "@-@" etc. glues a marker to both neighbours (to its left one only at a line's end);
    # nothing else is added or lost.
    def joined_len(line: str) -> int:
        toks = line.split()
        markers = [i for i, t in enumerate(toks) if t in ("@-@", "@,@", "@.@")]
        return len(toks) - sum(1 if i == len(toks) - 1 else 2 for i in markers)

    expected = sum(joined_len(ln) for ln in body)
    assert len(tokens) == expected
    assert not any(t in ("@-@", "@,@", "@.@") for t in tokens)
    assert "<unk>" in corpus.vocab
    assert "1,000" in corpus.vocab or "1,500" in corpus.vocab
    heldout = sum(len(s) for s in corpus.heldout)
    assert 0.05 * len(tokens) <= heldout <= 0.05 * len(tokens) + L.BLOCK_TOKENS
    # Vocabulary = train counts with the cut; sorted by frequency.
    counts = Counter(t for s in corpus.train for t in s)
    assert corpus.vocab == dict(counts)
    assert list(corpus.vocab.values()) == sorted(corpus.vocab.values(), reverse=True)


def test_split_is_deterministic_seeded_and_partitions_the_text(tmp_cache):
    kw = dict(sources=("wikitext103-test",), heldout_fraction=0.1, max_sentences=4000)
    a, b = L.load_lm_corpus(seed=1, **kw), L.load_lm_corpus(seed=1, **kw)
    c = L.load_lm_corpus(seed=2, **kw)
    assert a.train == b.train and a.heldout == b.heldout
    assert a.heldout != c.heldout
    assert len(a.train) + len(a.heldout) == 4000
    assert Counter(map(tuple, a.train + a.heldout)) == Counter(map(tuple, c.train + c.heldout))
    assert all(count >= 2 for count in a.vocab.values())
    recount = Counter(t for s in a.train for t in s)
    assert a.vocab == {w: n for w, n in recount.items() if n >= 2}
    assert list(L.iter_words(a))[:5] == a.train[0][:5]


def test_plaintext_source_is_sentence_split_and_lowercased(tmp_cache):
    corpus = L.load_lm_corpus(("inaugural",), lowercase=True, min_count=1, max_sentences=300)
    sents = corpus.train + corpus.heldout
    assert len(sents) == 300
    assert all(t == t.lower() for s in sents for t in s)
    # The first inaugural address opens with this salutation.
    assert sents[0][:3] == ["fellow-citizens", "of", "the"]
    lengths = sorted(len(s) for s in sents)
    assert 10 < lengths[len(lengths) // 2] < 60  # median: sentences, not whole paragraphs


def test_regex_sentence_splitter():
    text = 'Mr. Smith met Dr. J. Brown in Washington. It rained! "Why?" he asked. 3 days later, he left.'
    assert lm_sources.split_sentences(text) == [
        "Mr. Smith met Dr. J. Brown in Washington.",
        "It rained!",
        '"Why?" he asked.',
        "3 days later, he left.",
    ]
    assert lm_sources.tokenize("He didn't go.") == ["He", "did", "n't", "go", "."]


def test_corrupt_cache_is_rebuilt(tmp_cache):
    kw = dict(sources=("wikitext103-valid",), max_sentences=200)
    first = L.load_lm_corpus(**kw)
    entries = list(tmp_cache.glob("lm_corpus-*.npz"))
    assert len(entries) == 1
    entries[0].write_bytes(b"not an npz entry")
    again = L.load_lm_corpus(**kw)
    assert again.train == first.train and again.vocab == first.vocab


def test_bad_arguments_and_missing_data(tmp_path, monkeypatch, tmp_cache):
    with pytest.raises(ValueError, match="unknown LM corpus source"):
        L.load_lm_corpus(("nope",))
    with pytest.raises(ValueError, match="heldout_fraction"):
        L.load_lm_corpus(("brown",), heldout_fraction=1.5)
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match="wikitext-103"):
        L.load_lm_corpus(("wikitext103-valid",))


def test_every_nltk_corpus_read_says_where_to_get_it(tmp_path, monkeypatch):
    """A missing ABC or web-text zip (language-model corpora beside Brown) said what was missing but not where to
    get it: the sources listed the five NLTK packages the probes read, not these. Every corpus a reader is defined
    for now names its downloader command."""
    from corpora.nltk_corpora import _specs, nltk_corpus

    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    for name in _specs():
        with pytest.raises(DataMissingError, match=rf"Obtain it from: .* nltk\.downloader .* {name}\."):
            nltk_corpus(name)
