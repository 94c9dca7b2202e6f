"""WordNet from several threads at once (the app serves each browser session in its own thread).

NLTK's reader loads synsets lazily through one shared file handle; without the lock in
corpora/wordnet.py concurrent lookups read each other's lines (WordNetError / AttributeError or wrong
senses), as three browser sessions on the Polysemy explorer did (docs/benchmarks.md, issue 17).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from corpora import wordnet as wn_module
from corpora.semcor import load_semcor


def _fresh_reader() -> None:
    wn_module._senses.cache_clear()
    wn_module._wordnet_for.cache_clear()
    wn_module._wordnet_reader.cache_clear()


def test_concurrent_lookups_equal_sequential_ones():
    sentences, _ = load_semcor()
    pairs = sorted({(t.lemma, t.pos) for s in sentences[:3000] for t in s.tokens if t.lemma and t.pos})[:1600]
    _fresh_reader()
    expected = {p: [(x.key, x.gloss) for x in wn_module.senses(*p)] for p in pairs}
    assert sum(map(len, expected.values())) > 2000

    def lookup(chunk):
        return {p: [(x.key, x.gloss) for x in wn_module.senses(*p)] for p in chunk}

    for _ in range(2):
        _fresh_reader()  # nothing loaded: every lookup reads the data files
        with ThreadPoolExecutor(8) as pool:
            parts = list(pool.map(lookup, [pairs[i::8] for i in range(8)]))
        got = {k: v for part in parts for k, v in part.items()}
        assert got == expected
