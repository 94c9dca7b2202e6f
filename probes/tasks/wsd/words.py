"""The target words of a lexical sample, and what the command line says about a WSD run on files.

A lexical-sample line names its target word by its 4th field (the lemma column: ``serve`` for
*served*); without it the target is the word form lower-cased, so ``serve``, ``served`` and ``serves``
are three target words, each with its own sense inventory. Nothing in the numbers shows that, so
every run on a lexical sample counts its target words (``extra["target_words"]``) and the command
line says where they came from (``target_note``). F1 per target word is a breakdown row of the
pooled one (``probes.tasks.wsd.rows.evaluate``, ``"<dataset>:word=serve"``) when there are two or more.

The tie rule (``TIE_RULE``, shown by ``python -m probes wsd --help``): 1-NN takes the nearest sense
centroid; cosines within ``NearestSenseWSD.tie_tol`` of the best tie, and a tie goes to the
candidate listed first (``Inventory.senses``): the most frequent training label of the target, or the
earliest in WordNet order with a WordNet inventory. A static model gives one vector per word type:
when every sense of a target was seen with that one word form only, every sense centroid is that
vector and every test instance ties, so the model answers the most frequent label, exactly the
``most-frequent-label`` baseline (another order moved GloVe by ~54 F1 points: docs/datasets.md). A
label shared by several forms (``said`` and ``says`` as two targets, or one lemma) has a centroid that
mixes the forms' vectors: no tie, and a static model's answer follows the forms each sense was seen with.
"""

from __future__ import annotations

from probes.tasks.wsd.inventory import LABELS, WORDNET

TIE_RULE = (
    "Ties go to the target's most frequent training label (WordNet inventory: WordNet order): a static "
    "model gives one vector per word type, so when a target's senses were all seen with its one word "
    "form every instance ties and the model scores the most-frequent-label baseline"
)
INFLECTIONS = "give a lemma column to merge inflections like serve/served/serves"


def target_words(train, evaluated) -> dict:
    """What a run on lexical-sample splits states about its targets ({} for other data): the target
    words of the evaluated instances and how many lines of the files (``train`` and ``evaluated``,
    once each) had no lemma column."""
    if evaluated.words is None:
        return {}
    splits = [train] if train is evaluated else [train, evaluated]
    lines = [s for s in splits if s.words is not None]
    return {
        "target_words": len(set(evaluated.words)),
        "lines_without_lemma": sum(s.unlemmatised for s in lines),
        "lines": sum(len(s) for s in lines),
    }


def target_note(extra: dict) -> str | None:
    """``found K target words (from …)`` for a run on a lexical sample, else None."""
    if "target_words" not in extra:
        return None
    k, missing, lines = extra["target_words"], extra["lines_without_lemma"], extra["lines"]
    found = f"found {k} target word{'' if k == 1 else 's'}"
    if not missing:
        return f"{found} (from the lemma column)"
    where = "" if missing == lines else f" on the {missing} of {lines} lines without a lemma"
    return f"{found} (from the word form{where}; {INFLECTIONS})"


def wsd_summary(res) -> list[str]:
    """What the command line prints after the rows: the data, the inventory, the target words."""
    ex = res.extra
    if "train" not in ex:
        return []
    inventories = {
        WORDNET: "WordNet 3.0 (labels are WordNet sense keys; first-sense backoff)",
        LABELS: "labels seen in training per lemma (most-frequent-label backoff)",
    }
    inventory = inventories.get(ex.get("inventory"), "?")
    notes = [n for n in (target_note(ex), backoff_note(ex)) if n]
    return [
        f"  data {res.dataset}: {ex['train_instances']:,} training and {ex['eval_instances']:,} evaluated instances; "
        f"sense inventory: {inventory}"
    ] + [f"  {note}" for note in notes]


def backoff_note(extra: dict) -> str | None:
    """How many evaluated instances no layer can decide: no candidate sense was seen in training, so every
    layer answers the backoff (None without a held-out test split, where the count is not kept)."""
    if "instances_with_seen_sense" not in extra:
        return None
    n, seen = extra["eval_instances"], extra["instances_with_seen_sense"]
    backoff = "WordNet's first sense" if extra.get("inventory") == WORDNET else "the most frequent training label"
    return (
        f"{n - seen} of {n} evaluated instances ({100 * (n - seen) / max(n, 1):.0f}%) had no sense seen in training "
        f"and fell back to {backoff} at every layer; layers can differ on the other {seen} only"
    )
