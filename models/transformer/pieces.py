"""Words ↔ subword pieces: alignment, windows over long sentences, batches, pooling, word attention.

Pure functions over numpy/torch arrays (no model): steps 1, 2 and 4 of the pipeline described in
``models.transformer``, and the word-level attention A_word = Q · A_piece · Kᵀ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from corpora.errors import RequestError


@dataclass
class Row:
    """One forward-pass input: a whole sentence or one window of it.

    ids:       piece ids with special tokens, (T,)
    piece_pos: position in ``ids`` of each content piece of the window (the rest are specials)
    sel:       which of the window's content pieces this row supplies (bool, same length as piece_pos)
    words:     word index (in the sentence) of each content piece
    start:     index of the window's first content piece among the sentence's pieces
    """

    sentence: int
    start: int
    ids: list[int]
    piece_pos: np.ndarray
    words: np.ndarray
    sel: np.ndarray


def word_pieces(
    tokenizer, sentences: list[list[str]], unk_id: int, prefix: str = ""
) -> list[tuple[list[int], np.ndarray]]:
    """Per sentence: content piece ids and the word index of each piece (every word ≥ 1 piece).

    One fast-tokenizer call over all sentences; a word the tokenizer drops entirely (e.g. a
    zero-width space) gets ``unk_id``, inserted before the first piece of the next word. ``prefix``
    goes before every word (a space for byte-level tokenizers behind a regex split: ``tokens.py``).
    A word read as a control token is text again (:func:`as_text`).
    """
    words_of = sentences
    if prefix:
        sentences = [[prefix + w for w in s] for s in sentences]
    enc = tokenizer(
        sentences,
        is_split_into_words=True,
        add_special_tokens=False,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    control = control_ids(tokenizer, unk_id)
    out = []
    for i, words in enumerate(sentences):
        ids = enc["input_ids"][i]
        wids = enc.word_ids(i)
        word_of = np.fromiter((-1 if w is None else w for w in wids), dtype=np.int64, count=len(wids))
        keep = word_of >= 0
        if not keep.all():
            ids = [t for t, k in zip(ids, keep) if k]
            word_of = word_of[keep]
        present = np.zeros(len(words), bool)
        present[word_of] = True
        if not present.all():  # a word the tokenizer dropped entirely: give it the unknown piece
            missing = np.flatnonzero(~present)
            ids_arr = np.asarray(ids, dtype=np.int64)
            # insert before the first piece of the next word, keeping word order
            at = np.searchsorted(word_of, missing)
            ids = np.insert(ids_arr, at, unk_id).tolist()
            word_of = np.insert(word_of, at, missing)
        if not control.isdisjoint(ids):
            ids, word_of = as_text(tokenizer, words_of[i], ids, word_of, control, unk_id, prefix)
        out.append((ids, word_of))
    return out


def control_ids(tokenizer, unk_id: int) -> frozenset[int]:
    """The tokenizer's special ids but the unknown piece (which stands for text it cannot spell)."""
    return frozenset(tokenizer.all_special_ids) - {unk_id}


def as_text(
    tokenizer,
    words: list[str],
    ids: list[int],
    word_of: np.ndarray,
    control: frozenset[int],
    unk_id: int,
    prefix: str = "",
) -> tuple[list[int], np.ndarray]:
    """One sentence's pieces with every word that got a control piece spelled one character at a time.

    ``split_special_tokens`` keeps a literal ``[SEP]`` or ``<|endoftext|>`` text for added tokens, but a
    SentencePiece (Unigram) vocabulary holds its own ``</s>`` and ``<pad>`` (T5, ALBERT) or ``[SEP]``
    (DeBERTa-v3) with a score no real piece beats, so the word ``</s>`` would reach the model as the
    end of the sequence. Spelled per character it is text; a character that is still a control piece
    is the unknown piece.
    """
    spelled = {int(w) for t, w in zip(ids, word_of) if t in control}
    new_ids: list[int] = []
    new_of: list[int] = []
    for t, w in zip(ids, word_of):
        w = int(w)
        if w not in spelled:
            new_ids.append(t)
            new_of.append(w)
        elif not new_of or new_of[-1] != w:  # the word's first piece: spell the whole word
            chars = list(words[w])
            chars[0] = prefix + chars[0]
            enc = tokenizer([chars], is_split_into_words=True, add_special_tokens=False)["input_ids"][0]
            spelt = [unk_id if p in control else p for p in enc] or [unk_id]
            new_ids += spelt
            new_of += [w] * len(spelt)
    return new_ids, np.asarray(new_of, dtype=np.int64)


def per_word_pieces(tokenizer, sentences: list[list[str]], unk_id: int) -> list[tuple[list[int], np.ndarray]]:
    """Like :func:`word_pieces` for a tokenizer without ``word_ids()`` (Python-only): each word tokenized alone.

    A word's pieces are then those of the word out of context (no word-boundary marker from a
    preceding space), which the embedder flags. Each distinct word is tokenized once.
    """
    known: dict[str, list[int]] = {}
    control = control_ids(tokenizer, unk_id)
    out = []
    for words in sentences:
        ids: list[int] = []
        word_of: list[int] = []
        for i, w in enumerate(words):
            if w not in known:
                alone = list(tokenizer(w, add_special_tokens=False)["input_ids"]) or [unk_id]
                if not control.isdisjoint(alone):
                    alone = as_text(tokenizer, [w], alone, np.zeros(len(alone), np.int64), control, unk_id)[0]
                known[w] = alone
            ids += known[w]
            word_of += [i] * len(known[w])
        out.append((ids, np.asarray(word_of, dtype=np.int64)))
    return out


def check_one_window(
    sentences: Sequence[Sequence[str]], pieces: list[tuple[list[int], np.ndarray]], window: int, name: str
) -> None:
    """RequestError for the first sentence longer than one window (attention maps cannot be stitched across
    windows), named by its words: the caller's index is not known here (empty sentences were left out)."""
    for words, (ids, _) in zip(sentences, pieces):
        if len(ids) > window:
            text = " ".join(words)
            text = text if len(text) <= 40 else text[:39].rstrip() + "…"
            raise RequestError(
                f"The sentence “{text}” has {len(ids):,} pieces; {name} takes at most {window:,} in one window. Its "
                "vectors are computed in overlapping windows, but attention maps cannot be stitched across windows: "
                f"shorten it to ≤ {window:,} pieces for attention."
            )


def make_rows(
    pieces: list[tuple[list[int], np.ndarray]],
    window: int,
    stride: int,
    wrap: Callable[[list[int]], tuple[list[int], int]],
    best_window: Callable[[np.ndarray, int], np.ndarray],
) -> list[Row]:
    """Forward-pass rows of all sentences: one per sentence, or overlapping windows of ``window`` pieces.

    wrap(pieces) -> (ids with special tokens, offset of the first content piece);
    best_window(starts, n) -> for each of n pieces the index of the window it takes its vector from.
    """
    rows: list[Row] = []
    for s, (ids, word_of) in enumerate(pieces):
        n = len(ids)
        if n <= window:
            wrapped, off = wrap(ids)
            rows.append(Row(s, 0, wrapped, np.arange(off, off + n), word_of, np.ones(n, bool)))
            continue
        starts = list(range(0, n - window, stride)) + [n - window]
        best = best_window(np.asarray(starts), n)
        for w, st in enumerate(starts):
            wrapped, off = wrap(ids[st : st + window])
            sl = slice(st, st + window)
            rows.append(Row(s, st, wrapped, np.arange(off, off + window), word_of[sl], best[sl] == w))
    return rows


def best_window_centered(starts: np.ndarray, n: int, window: int) -> np.ndarray:
    """BERT: the window where the piece has the most context on its poorer side (min of left, right)."""
    p = np.arange(n)[:, None]
    inside = (p >= starts[None]) & (p < starts[None] + window)
    ctx = np.minimum(p - starts[None], starts[None] + window - 1 - p)
    return np.where(inside, ctx, -1).argmax(1)


def best_window_left(starts: np.ndarray, n: int, window: int) -> np.ndarray:
    """GPT: the window where the piece has the most left context (the earliest that contains it)."""
    p = np.arange(n)[:, None]
    inside = (p >= starts[None]) & (p < starts[None] + window)
    ctx = p - starts[None]
    return np.where(inside, ctx, -1).argmax(1)


def pack_batches(
    rows: Sequence[Row], max_tokens: int, attn_cost: int = 0, attn_budget: int = 64 * 2**20
) -> list[list[int]]:
    """Row indices grouped into padding-aware batches, longest first (fail early on memory).

    rows × padded length ≤ ``max_tokens``; with ``attn_cost`` (layers × heads, attention asked
    for) also rows × length² × attn_cost ≤ ``attn_budget`` attention floats (256 MB in fp32).
    """
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
    batches, cur, cur_len = [], [], 0
    for i in order:
        length = cur_len or len(rows[i].ids)  # sorted: the first row of a batch is its longest
        fits = (len(cur) + 1) * length <= max_tokens
        if attn_cost:
            fits = fits and (len(cur) + 1) * length * length * attn_cost <= attn_budget
        if cur and not fits:
            batches.append(cur)
            cur, cur_len = [], 0
            length = len(rows[i].ids)
        cur.append(i)
        cur_len = length
    if cur:
        batches.append(cur)
    return batches


def pad_right(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of piece ids right-padded with ``pad_id`` to the longest: (ids, 0/1 attention mask), both (B, T) int64."""
    T = max(len(x) for x in ids)
    arr = np.full((len(ids), T), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), T), dtype=np.int64)
    for b, x in enumerate(ids):
        arr[b, : len(x)] = x
        mask[b, : len(x)] = 1
    return arr, mask


def piece_weights(word_of: np.ndarray, n_words: int, pooling: str) -> np.ndarray:
    """(num_pieces,) pooling weight: 1/count for "mean", 1 on a word's first ("first") or last ("last") piece."""
    if pooling == "mean":
        return 1.0 / np.bincount(word_of, minlength=n_words)[word_of]
    pick = np.ones(len(word_of), bool)
    if pooling == "first":
        pick[1:] = word_of[1:] != word_of[:-1]
    else:
        pick[:-1] = word_of[:-1] != word_of[1:]
    return pick.astype(np.float64)


def word_attention(brows: Sequence[Row], att: torch.Tensor, n_words: np.ndarray) -> dict[int, np.ndarray]:
    """(L, B, H, T, T) piece attention -> per sentence (L, H, W, W), rows renormalised over words.

    K (B, W, T): 0/1 word membership of the key pieces (a word receives the sum of the attention
    to its pieces); Q = K / piece counts (a word's row is the mean over its query pieces).
    """
    T = att.shape[-1]
    W = max(int(n_words[r.sentence]) for r in brows)
    K = np.zeros((len(brows), W, T), dtype=np.float32)
    for b, r in enumerate(brows):
        K[b, r.words, r.piece_pos] = 1.0
    Kt = torch.from_numpy(K).to(att.device, dtype=torch.float32)
    Q = Kt / Kt.sum(-1, keepdim=True).clamp_min(1.0)
    word_att = torch.einsum("bwt,lbhts,bvs->blhwv", Q, att.float(), Kt)
    word_att = word_att / word_att.sum(-1, keepdim=True).clamp_min(1e-12)
    word_att = word_att.cpu().numpy()
    return {
        r.sentence: np.ascontiguousarray(word_att[b, :, :, : n_words[r.sentence], : n_words[r.sentence]])
        for b, r in enumerate(brows)
    }
