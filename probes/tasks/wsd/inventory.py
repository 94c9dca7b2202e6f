"""The sense inventory of a WSD run: which labels an instance may take, and the no-embedding answers.

Two kinds, chosen from the data (``Inventory.build``):

- **WordNet 3.0** (every training and gold label is a WordNet sense key, and the instances carry a
  lemma and POS — the framework's XML, the built-in data): the candidates of an instance are its
  lemma+POS's WordNet senses in WordNet order; backoff (no candidate seen in training) is WordNet's
  first sense. The most-frequent-sense baseline takes the candidate seen most often in training
  (ties: WordNet order), else the first sense — with SemCor as training, "MFS in SemCor".
- **Labels** (anything else, e.g. a lexical sample with your own sense names): the candidates of an
  instance are the labels seen in training with its target (lemma, or lemma+POS), most frequent
  first; backoff for a target never seen in training is the most frequent training label overall,
  which is also the most-frequent-label baseline's answer there.

Counts come only from the training instances given (in k-fold evaluation, the other folds).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from corpora import wordnet
from corpora.semcor import wordnet_sense_keys
from probes.errors import ProbeInputError

WORDNET, LABELS = "wordnet", "labels"

Target = tuple[str, str]  # (lemma, pos); pos is "" for lexical-sample data


def is_sense_key(label: str, known: frozenset[str] | set[str]) -> bool:
    return "%" in label and label in known


@dataclass
class Inventory:
    """Candidates and backoffs for the test targets, from the training labels.

    counts:    label -> how many training instances carry it (a multi-key instance counts each).
    by_target: (labels mode) target -> Counter of its training labels.
    wordnet:   (WordNet mode) target -> its sense keys in WordNet order.
    """

    kind: str
    counts: Counter
    by_target: dict[Target, Counter] = field(default_factory=dict)
    wordnet: dict[Target, tuple[str, ...]] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)  # label -> first occurrence in training
    by_lemma: bool = False  # (labels mode) some target names no POS: targets are their lemmas alone

    def target(self, lemma: str, pos: str) -> Target:
        """(labels mode) the key a target's training labels are counted under: one tag set for every file (NN,
        NOUN and n are one POS), and the lemma alone when some target of the run names no POS (``bank.n`` in
        training, ``bank`` in test)."""
        return (lemma, "") if self.by_lemma else (lemma, same_pos(pos))

    @classmethod
    def build(
        cls,
        kind: str,
        train_targets: Sequence[Target] | None,
        train_golds: Sequence[Sequence[str]],
        test_targets: Iterable[Target],
    ) -> Inventory:
        counts: Counter = Counter()
        order: dict[str, int] = {}
        for golds in train_golds:
            for k in golds:
                counts[k] += 1
                order.setdefault(k, len(order))
        if kind == WORDNET:
            # WordNet lookups once per lemma+POS, from the on-disk inventory.
            return cls(kind, counts, wordnet=wordnet.sense_inventory(test_targets), order=order)
        if train_targets is None:
            raise ValueError("A labels inventory needs the training targets.")
        by_lemma = any(not pos for _, pos in [*train_targets, *test_targets])
        inv = cls(kind, counts, order=order, by_lemma=by_lemma)
        for (lemma, pos), golds in zip(train_targets, train_golds):
            inv.by_target.setdefault(inv.target(lemma, pos), Counter()).update(golds)
        return inv

    def _ranked(self, counter: Counter) -> tuple[str, ...]:
        return tuple(sorted(counter, key=lambda k: (-counter[k], self.order[k])))

    def senses(self, lemma: str, pos: str) -> Sequence[str]:
        """Candidate labels of a target, in tie-breaking order."""
        if self.kind == WORDNET:
            return self.wordnet[(lemma, pos)]
        found = self.by_target.get(self.target(lemma, pos))
        return self._ranked(found) if found else ()

    def backoff(self, lemma: str, pos: str) -> str | None:
        """The answer when no candidate was seen in training."""
        if self.kind == WORDNET:
            return next(iter(self.wordnet[(lemma, pos)]), None)
        return self.most_frequent_overall()

    def most_frequent_overall(self) -> str | None:
        return self._ranked(self.counts)[0] if self.counts else None

    def most_frequent(self, lemma: str, pos: str) -> str | None:
        """The most-frequent-sense (label) baseline's answer for one target."""
        cands = self.senses(lemma, pos)
        if self.kind == WORDNET:
            seen = [k for k in cands if self.counts[k]]
            return max(seen, key=lambda k: self.counts[k]) if seen else next(iter(cands), None)
        return cands[0] if cands else self.most_frequent_overall()

    def first_sense(self, lemma: str, pos: str) -> str | None:
        """WordNet's first sense (WordNet mode only)."""
        return next(iter(self.wordnet[(lemma, pos)]), None)


def same_pos(pos: str) -> str:
    """A POS tag in one tag set (WordNet's letter: NN, NOUN and n are "n"); a tag of no known set as it is."""
    try:
        return wordnet.wn_pos(pos) or pos
    except ValueError:
        return pos


def choose_kind(labels_of: dict[str, Iterable[str]], has_pos: bool) -> str:
    """WordNet when every label (``labels_of``: file name -> its labels) is a WordNet 3.0 sense key and instances
    carry lemma + POS; labels when none is. Some keys and some not (a typo, a WordNet 3.1 key) would silently turn
    the whole run into labels mode, every key a label of its own: a ProbeInputError naming them instead."""
    if not has_pos:
        return LABELS
    known = wordnet_sense_keys()
    unknown = {name: sorted({k for k in labels if not is_sense_key(k, known)}) for name, labels in labels_of.items()}
    if not any(unknown.values()):
        return WORDNET
    if not any(is_sense_key(k, known) for labels in labels_of.values() for k in labels):
        return LABELS
    named = "; ".join(
        f"{name}: {len(keys)} ({', '.join(keys[:5])}{', …' if len(keys) > 5 else ''})"
        for name, keys in unknown.items()
        if keys
    )
    plain = sorted({k for keys in unknown.values() for k in keys if "%" not in k})
    why = (
        f" {', '.join(map(repr, plain[:3]))} {'is' if len(plain) == 1 else 'are'} no sense key (Senseval's 'U' marks "
        "an instance no sense fits): remove those instances from the key file."
        if plain
        else " A typo or a key of another WordNet version?"
    )
    raise ProbeInputError(
        f"Some labels are WordNet 3.0 sense keys and some are not — {named}.{why} Use WordNet 3.0 keys throughout "
        "(scored against WordNet's senses), or labels of your own throughout (scored among the labels seen in "
        "training)."
    )
