"""Logic of the Embedding-space page: word lists, static vectors, contextual token neighbours."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np
import pandas as pd

from viz.projection import cosine_neighbours
from viz.text import InputError, tokenize

MAX_MAP_WORDS = 200


def parse_word_groups(text: str | None, max_words: int = MAX_MAP_WORDS) -> tuple[list[str], list[str], list[str]]:
    """Words to map, one group per line (``"king queen prince"`` / ``"paris rome berlin"``).

    Returns (words, groups, warnings); duplicates are dropped, punctuation ignored; other tokens without a letter
    or digit (an emoji, a symbol) are dropped with a warning naming them. A group is named by its line in the box
    (blank lines counted, so "line 6" is the sixth line the user sees).
    """
    if text is None or not text.strip():
        raise InputError("Type some words to map, a few per line (each line gets its own colour).")
    words: list[str] = []
    groups: list[str] = []
    seen: set[str] = set()
    warnings: list[str] = []
    dropped: list[str] = []
    for li, line in enumerate(text.splitlines()):
        every = tokenize(line.replace(",", " "))
        toks = [t for t in every if is_word(t)]
        dropped += [t for t in every if not is_word(t) and not all(unicodedata.category(ch)[0] == "P" for ch in t)]
        if not toks:
            continue
        label = f"line {li + 1}: " + " ".join(toks)  # whole: the legend wraps it, the CSV keeps it
        for t in toks:
            if t not in seen:
                seen.add(t)
                words.append(t)
                groups.append(label)
    if dropped:
        warnings.append(f"Not words, left out: {' '.join(dict.fromkeys(dropped))} (a word has a letter or digit).")
    if not words:
        raise InputError("No words found; type words separated by spaces, e.g. “king queen man woman”.")
    if len(words) > max_words:
        warnings.append(f"{len(words)} words given; only the first {max_words} are mapped.")
        words, groups = words[:max_words], groups[:max_words]
    return words, groups, warnings


def static_vectors(emb, words: list[str]) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """Layer-0 vectors of ``words`` from a static model; unknown words are left out.

    Returns (vectors (k, dim), kept words, kept indices as words' positions, missing words).
    """
    out = emb.embed([[w] for w in words])
    kept, idx, missing, vecs = [], [], [], []
    for i, (w, o) in enumerate(zip(words, out)):
        is_oov = bool(o.oov[0]) if o.oov is not None else False
        v = o.vectors[0, 0]
        if (is_oov and not np.any(v)) or not np.any(v):
            missing.append(w)
            continue
        kept.append(w)
        idx.append(i)
        vecs.append(v)
    mat = np.stack(vecs) if vecs else np.zeros((0, emb.dim), np.float32)
    return mat, kept, idx, missing


@dataclass
class TokenTable:
    """All tokens of some typed sentences at one layer, for token-to-token neighbours."""

    vectors: np.ndarray  # (num_tokens, dim)
    rows: pd.DataFrame  # sentence, position, token, context


def is_word(token: str) -> bool:
    """A token with a letter or digit (punctuation is neither a query nor a neighbour)."""
    return any(ch.isalnum() for ch in token)


def token_table(outs: list[dict], layer: int, words_only: bool = True) -> TokenTable:
    """Every token of the sentences at ``layer`` (with ``words_only``, punctuation left out)."""
    vecs, rows = [], []
    for si, o in enumerate(outs):
        words = o["words"]
        for wi, w in enumerate(words):
            if words_only and not is_word(w):
                continue
            vecs.append(o["vectors"][layer, wi])
            left = " ".join(words[max(0, wi - 4) : wi])
            right = " ".join(words[wi + 1 : wi + 5])
            rows.append(
                {"sentence": si + 1, "position": wi + 1, "token": w, "context": f"{left} [{w}] {right}".strip()}
            )
    dim = outs[0]["vectors"].shape[-1] if outs else 0
    return TokenTable(np.stack(vecs) if vecs else np.zeros((0, dim), np.float32), pd.DataFrame(rows))


def token_neighbours(table: TokenTable, i: int, k: int = 10) -> pd.DataFrame:
    """Nearest tokens (cosine) to token ``i`` among all typed tokens, excluding itself."""
    nn = cosine_neighbours(table.vectors, i, k)
    df = table.rows.iloc[[j for j, _ in nn]].copy()
    df.insert(0, "cosine", [round(s, 4) for _, s in nn])
    return df.reset_index(drop=True)
