"""Plain typed records returned by every reader in ``corpora``.

Readers return these and nothing else, so the probes, the app and the tests never depend on
file formats. Tokens are kept exactly as the corpus writes them (SemCor multiword tokens stay one
word, e.g. ``Fulton_County_Grand_Jury``); models split them when they need pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SemcorToken:
    text: str  # surface form; multiword tokens joined by "_"
    pos: str | None  # PTB tag (None for punctuation without a tag)
    lemma: str | None
    sense_keys: tuple[str, ...] = ()  # resolvable WordNet 3.0 keys "lemma%lexsn"; () if untagged

    @property
    def pieces(self) -> list[str]:
        """Words of a multiword token, e.g. ['Fulton', 'County', 'Grand', 'Jury']."""
        if "_" not in self.text:  # almost every token: skip the split (838k calls per SemCor pass)
            return [self.text]
        return [p for p in self.text.split("_") if p] or [self.text]


@dataclass(frozen=True)
class SemcorSentence:
    doc: str  # e.g. "brown1/br-a01"
    snum: str
    tokens: tuple[SemcorToken, ...]

    @property
    def words(self) -> list[str]:
        return [t.text for t in self.tokens]


@dataclass
class SemcorStats:
    files: int = 0
    sentences: int = 0
    tokens: int = 0
    tagged_tokens: int = 0  # tokens with >=1 sense tag before filtering (cmd=done + lexsn)
    sense_tags: int = 0  # individual sense tags before filtering (a ';' list counts each)
    resolved_tags: int = 0  # tags kept: resolve in WordNet 3.0
    dropped_wnsn0: int = 0  # tags dropped because wnsn=0 (sense not in WN 3.0)
    dropped_unresolved: int = 0  # tags dropped because the key does not resolve in WN 3.0
    malformed_lines: int = 0  # lines that could not be parsed (counted, skipped)


@dataclass(frozen=True)
class WsdInstance:
    id: str  # e.g. "senseval2.d000.s000.t000"
    index: int  # position of the instance in its sentence's word list
    lemma: str
    pos: str  # universal POS of the framework: NOUN, VERB, ADJ, ADV
    gold_keys: tuple[str, ...]  # one or more WordNet 3.0 sense keys


@dataclass(frozen=True)
class WsdSentence:
    id: str
    words: tuple[str, ...]
    lemmas: tuple[str, ...]
    pos: tuple[str, ...]  # universal POS of every word
    instances: tuple[WsdInstance, ...]


@dataclass
class WsdDataset:
    name: str  # "senseval2", ..., "ALL"
    sentences: list[WsdSentence]

    @property
    def instances(self) -> list[WsdInstance]:
        return [inst for s in self.sentences for inst in s.instances]


@dataclass(frozen=True)
class TaggedSentence:
    """A WSJ sentence with PTB POS tags and (CoNLL-2000 only) BIO chunk tags."""

    words: tuple[str, ...]
    pos: tuple[str, ...]
    chunks: tuple[str, ...] | None = None


@dataclass
class LmCorpus:
    """Tokenized language-model text, split deterministically, with a vocabulary."""

    train: list[list[str]]  # sentences (lists of tokens)
    heldout: list[list[str]]
    vocab: dict[str, int] = field(default_factory=dict)  # word -> count (train split, after min-count)
    min_count: int = 1
    sources: tuple[str, ...] = ()

    @property
    def num_train_tokens(self) -> int:
        return sum(len(s) for s in self.train)
