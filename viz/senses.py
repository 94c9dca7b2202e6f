"""WordNet 3.0 sense descriptions for the app: a sense key -> name, gloss, lexicographer file.

A thin layer over :mod:`corpora.wordnet` (NLTK's reader on the data dir's WordNet) that never
raises for an unknown key (the app shows a placeholder instead) and adds a label for legends and tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from corpora.wordnet import UnknownSenseKeyError, sense_from_key, senses

POS_LETTERS = {"noun": "n", "verb": "v", "adjective": "a", "adverb": "r"}


@dataclass(frozen=True)
class SenseInfo:
    key: str
    synset: str  # e.g. "bank.n.01"
    gloss: str
    lexname: str  # e.g. "noun.object"

    @property
    def label(self) -> str:
        """Legends, tables and CSVs: "bank.n.01 · sloping land (especially the slope beside a body of water)", whole
        (a legend wraps it: ``viz.text.legend_label``; a CSV keeps what tells two senses apart)."""
        return f"{self.synset} · {self.gloss}"


@lru_cache(maxsize=20_000)
def sense_info(key: str) -> SenseInfo:
    """Describe a WordNet 3.0 sense key; an unknown key gives a placeholder (never an exception)."""
    try:
        s = sense_from_key(key)
    except UnknownSenseKeyError:
        return SenseInfo(key, key, "(not in WordNet 3.0)", "?")
    return SenseInfo(key, s.synset, s.gloss, s.lexname)


def wordnet_sense_count(lemma: str, pos: str = "any") -> int:
    """How many WordNet senses ``lemma`` has for one POS ("noun", …) or for all ("any")."""
    letters = POS_LETTERS.values() if pos == "any" else [POS_LETTERS[pos]]
    return sum(len(senses(lemma, letter)) for letter in letters)
