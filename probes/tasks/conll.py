"""CoNLL-2000 as the tagging probes read it: the first N sentences of a split, gold POS and chunk tags.

CoNLL-2000 train is WSJ sections 15–18 (8,936 sentences), test is section 20 (2,012).
"""

from __future__ import annotations

from corpora.types import TaggedSentence
from corpora.wsj import load_conll2000
from probes.errors import ProbeInputError, check_positive

DATASET = "conll2000"


def conll_slice(split: str, limit: int | None) -> list[TaggedSentence]:
    """Non-empty CoNLL-2000 sentences of ``split`` (the first ``limit``); ProbeInputError when none."""
    check_positive(limit, "--limit")
    sents = load_conll2000(split)
    sents = [s for s in (sents if limit is None else sents[:limit]) if s.words]
    if not sents:
        raise ProbeInputError(f"No CoNLL-2000 {split} sentences in this slice.")
    return sents


def feature_key(split: str, limit: int | None) -> str:
    """The feature-cache key of a CoNLL-2000 slice (shared by every probe that reads it)."""
    return f"conll2000-{split}" + ("" if limit is None else f"-limit{limit}")
