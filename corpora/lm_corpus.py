"""Tokenized language-model training text from the NLTK text corpora and WikiText-103 valid/test.

``load_lm_corpus()`` is the one entry point every trainer (word2vec, GloVe, GPT, ELMo) uses. It
returns an :class:`~corpora.types.LmCorpus`: sentences as token lists split into train and
held-out, and a train vocabulary with a min-count cut. How each source is read and tokenized is
in :mod:`corpora.lm_sources`.

Held-out split (deterministic, no sentence-level leakage): every document (an NLTK file, a
WikiText article) is cut into contiguous blocks of whole sentences of at most
``BLOCK_TOKENS`` tokens; blocks are shuffled with ``seed`` and taken into the held-out split
until it holds ``heldout_fraction`` of all tokens. Sentence order inside each split follows
the sources' order.

The built corpus is cached on disk (``corpora.paths.cache_dir()``), keyed by the arguments,
a format version and the source files' ``files_fingerprint`` (sizes, mtimes, inodes, ctimes); a corrupt cache
entry is rebuilt.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from corpora.cache import cached, files_fingerprint
from corpora.lm_sources import DEFAULT_SOURCES, NLTK_SOURCES, WIKITEXT_SOURCES, Document, read_source, source_files
from corpora.types import LmCorpus

CACHE_VERSION = 2  # 2: equal tokens share one str object (cache 40% smaller, 3x faster to load)
BLOCK_TOKENS = 2000
UNK = "<unk>"

__all__ = [
    "DEFAULT_SOURCES",
    "NLTK_SOURCES",
    "WIKITEXT_SOURCES",
    "BLOCK_TOKENS",
    "UNK",
    "load_lm_corpus",
    "iter_words",
    "corpus_stats",
]


# --------------------------------------------------------------------------- cache


def _cached_source(source: str) -> list[Document]:
    """Tokenized documents of a whole source, cached on disk (shared by every corpus variant)."""
    params = {"source": source, "files": files_fingerprint(source_files(source))}
    return cached("lm_source", CACHE_VERSION, params, lambda: _interned(read_source(source)))


def _interned(docs: Iterable[Document]) -> list[Document]:
    """Make equal tokens one object (less memory; the cache stores each distinct word once)."""
    pool: dict[str, str] = {}
    return [[[pool.setdefault(t, t) for t in sent] for sent in doc] for doc in docs]


# --------------------------------------------------------------------------- corpus


def _blocks(doc: Document, block_tokens: int) -> Iterator[Document]:
    block, size = [], 0
    for sent in doc:
        if block and size + len(sent) > block_tokens:
            yield block
            block, size = [], 0
        block.append(sent)
        size += len(sent)
    if block:
        yield block


def _build(
    sources: tuple[str, ...],
    lowercase: bool,
    min_count: int,
    heldout_fraction: float,
    seed: int,
    max_sentences: int | None,
) -> LmCorpus:
    blocks: list[Document] = []
    n_sents = 0
    for source in sources:
        # Whole sources are tokenized once and cached; a max_sentences prefix is read lazily.
        docs = read_source(source) if max_sentences is not None else _cached_source(source)
        for doc in docs:
            if max_sentences is not None:
                doc = doc[: max_sentences - n_sents]
            if lowercase:
                doc = [[t if t == UNK else t.lower() for t in s] for s in doc]
            blocks.extend(_blocks(doc, BLOCK_TOKENS))
            n_sents += len(doc)
            if max_sentences is not None and n_sents >= max_sentences:
                break
        if max_sentences is not None and n_sents >= max_sentences:
            break

    blocks = _interned(blocks)
    sizes = [sum(len(s) for s in b) for b in blocks]
    target = heldout_fraction * sum(sizes)
    order = list(range(len(blocks)))
    random.Random(seed).shuffle(order)
    held, got = set(), 0
    for i in order:
        if got >= target or len(held) == len(blocks) - 1:  # never leave the train split empty
            break
        held.add(i)
        got += sizes[i]

    train = [s for i, b in enumerate(blocks) if i not in held for s in b]
    heldout = [s for i, b in enumerate(blocks) if i in held for s in b]
    counts = Counter(t for s in train for t in s)
    vocab = {w: c for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count}
    return LmCorpus(train=train, heldout=heldout, vocab=vocab, min_count=min_count, sources=sources)


def load_lm_corpus(
    sources: Sequence[str] = DEFAULT_SOURCES,
    lowercase: bool = False,
    min_count: int = 2,
    heldout_fraction: float = 0.01,
    seed: int = 0,
    max_sentences: int | None = None,
) -> LmCorpus:
    """Build (or load from the cache) the LM corpus.

    Args:
        sources: names from ``DEFAULT_SOURCES``, read in this order.
        lowercase: lower-case every token except ``<unk>``.
        min_count: vocabulary keeps train words seen at least this often (``vocab`` is sorted by
            descending count, ties alphabetically). Sentences themselves are not altered: a
            trainer maps out-of-vocabulary words to its own unknown token.
        heldout_fraction: share of tokens in the held-out split (whole blocks, see module doc;
            at least one block always stays in train, so a one-block corpus has no held-out).
        seed: seeds the held-out block selection.
        max_sentences: keep only the first N sentences in source order (quick tests/debugging).

    Raises:
        ValueError: unknown source or bad argument.
        DataMissingError: a source's file is missing from the data dir.
    """
    sources = tuple(sources)
    if not sources:
        raise ValueError("load_lm_corpus needs at least one source")
    for s in sources:
        if s not in DEFAULT_SOURCES:
            raise ValueError(f"unknown LM corpus source {s!r}; choose from {', '.join(DEFAULT_SOURCES)}")
    if not 0.0 <= heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    if max_sentences is not None and max_sentences < 1:
        raise ValueError(f"max_sentences must be >= 1 or None, got {max_sentences}")

    files = [f for s in sources for f in source_files(s)]
    params = {
        "sources": sources,
        "lowercase": lowercase,
        "min_count": min_count,
        "heldout_fraction": heldout_fraction,
        "seed": seed,
        "max_sentences": max_sentences,
        "block_tokens": BLOCK_TOKENS,
        "files": files_fingerprint(files),
    }
    return cached(
        "lm_corpus",
        CACHE_VERSION,
        params,
        lambda: _build(sources, lowercase, min_count, heldout_fraction, seed, max_sentences),
        types=(LmCorpus,),
    )


def iter_words(corpus: LmCorpus, split: str = "train") -> Iterator[str]:
    """Every token of ``corpus.train`` (or ``heldout``) in order."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    for sent in getattr(corpus, split):
        yield from sent


def corpus_stats(corpus: LmCorpus) -> dict[str, int]:
    """Sentence/token counts and vocabulary size, for ``python -m probes stats`` and model cards."""
    return {
        "train_sentences": len(corpus.train),
        "train_tokens": corpus.num_train_tokens,
        "heldout_sentences": len(corpus.heldout),
        "heldout_tokens": sum(len(s) for s in corpus.heldout),
        "vocab_size": len(corpus.vocab),
    }
