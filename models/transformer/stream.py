"""Streamed extraction for the feature cache (``TransformerEmbedder.embed_rows``): the host off the critical path.

Issue 33 measured the old path on an H100: MiniLM's extraction at ~4 % of its own forward speed, a
1B-parameter shape at ~3k words/s, the time spent on the host: every layer's pooled pieces made float32
on the device, copied layer by layer (a synchronisation each), summed into a float32 buffer on the CPU,
sliced per sentence, checked and cast to float16 there. Here, per chunk of sentences:

1. **Plan** (host, :func:`plan_chunk`): tokenize, cut rows (windows), pack batches, and for every batch
   the flat piece positions and pooling weights of the words it completes, padded ids in (pinned) memory.
   On a GPU the next chunk is planned in a worker thread while the device runs this one (the fast
   tokenizer releases the GIL); on the CPU, where the forward's threads use every core, inline.
2. **Run** (device, :func:`run_chunk`): one forward per batch; each kept layer's pieces pooled into words
   on the device: a word's first piece × its weight, the other pieces index-added (the same float operations
   as ``TransformerEmbedder.embed``, so CPU values are identical; CUDA's ``index_add_`` adds atomically, in no
   fixed order, so GPU values can differ from run to run in the last bits), cast to the storage dtype on
   the device, then ONE non-blocking copy of all kept layers of the batch into pinned memory. The block of
   batch k is handed over (an event waited for) only after batch k+1 was launched, so the caller writes
   block k into the cache while the device computes.
3. Only the words the cache keeps (``keep``: WSD stores a quarter of SemCor's) are pooled and copied.

A sentence longer than one window has rows in several batches: its words are summed in a float32
accumulator on the device, in batch order as ``embed`` does, and handed over as its own block once its last
row ran. Out of GPU memory: the token budget is halved and the chunk's remaining rows re-packed, as in
``embed`` (partial sums are added only after a batch's work succeeded).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice

import numpy as np
import torch

from models.base import RowBlock, check_keep
from models.oom import run_or_oom
from models.transformer.memory import repack_after_oom
from models.transformer.pieces import Row, pad_right, piece_weights

INTS = ("ids", "mask", "lead_src", "scaled", "rest_src", "rest_dst")
FLOATS = ("scaled_w", "rest_w")


@dataclass
class BatchPlan:
    """One forward pass and the pooling of the words it completes, its index arrays packed into one int64 and
    one float32 host buffer (pinned for a GPU: two non-blocking copies a batch).

    ``ints`` holds, in ``INTS`` order: the (B, T) padded ids and mask; lead_src, the flat position
    (``row * T + pos``) of the first kept piece of each output word; scaled, the output rows whose first piece
    weighs other than 1; rest_src/rest_dst, the words' further pieces and their output rows. ``floats``: the
    weights of scaled and rest. sentences/counts: the single-row sentences whose words these are, in output
    order; long: (sentence, flat positions, slots, weights) of the pieces of multi-row sentences.
    """

    rows: list[int]
    shape: tuple[int, int]
    ints: torch.Tensor
    int_sizes: list[int]
    floats: torch.Tensor
    float_sizes: list[int]
    sentences: np.ndarray
    counts: np.ndarray
    long: list[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=list)

    @property
    def num_words(self) -> int:
        return self.int_sizes[2]

    def on(self, device: torch.device) -> dict[str, torch.Tensor]:
        """The index arrays on ``device`` by name (``INTS``, ``FLOATS``); ids and mask as (B, T)."""
        ints = dict(zip(INTS, self.ints.to(device, non_blocking=True).split(self.int_sizes)))
        floats = dict(zip(FLOATS, self.floats.to(device, non_blocking=True).split(self.float_sizes)))
        ints["ids"], ints["mask"] = ints["ids"].view(self.shape), ints["mask"].view(self.shape)
        return ints | {k: v[:, None] for k, v in floats.items()}


@dataclass
class ChunkPlan:
    """A chunk's rows, per-sentence pooling weights, output slots of kept words, and batches."""

    rows: list[Row]
    weights: list[np.ndarray]
    slots: list[np.ndarray]  # per sentence: output slot of each word, -1 where not kept
    counts: np.ndarray  # kept words per sentence
    rows_left: dict[int, int]  # multi-row sentence -> its rows not yet run
    sentences: list[int]  # chunk indices of the non-empty sentences (rows refer to these positions)
    batches: list[BatchPlan]
    empty: list[int]  # chunk indices of the empty sentences (no rows: a block of none)


def _pieces_of(plan: ChunkPlan, r: Row) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions in the row, output slots, weights) of the kept pieces a row supplies."""
    s = r.sentence
    w = plan.weights[s][r.start : r.start + len(r.words)]
    slot = plan.slots[s][r.words]
    take = r.sel & (slot >= 0) & (w > 0)
    return r.piece_pos[take], slot[take], w[take]


def plan_batch(emb, plan: ChunkPlan, row_ids: list[int], pin: bool) -> BatchPlan:
    """The index arrays of one batch (host work; see the module doc)."""
    rows = [plan.rows[i] for i in row_ids]
    ids, mask = pad_right([r.ids for r in rows], emb.tokenizer.pad_token_id or 0)
    T = ids.shape[1]
    lead_src, scaled_at, scaled_w, rest_src, rest_dst, rest_w = [], [], [], [], [], []
    sentences, counts, long = [], [], []
    out = 0
    for b, r in enumerate(rows):
        pos, slot, w = _pieces_of(plan, r)
        if r.sentence in plan.rows_left:
            parts = (b * T + pos, slot, w.astype(np.float32)[:, None])
            long.append((r.sentence, *(torch.from_numpy(np.ascontiguousarray(a)) for a in parts)))
            continue
        lead = np.ones(len(slot), bool)
        lead[1:] = slot[1:] != slot[:-1]
        lead_src.append(b * T + pos[lead])
        scaled = np.flatnonzero(w[lead] != 1)  # weight 1 (one-piece words, first/last pooling): x * 1 = x
        scaled_at.append(out + scaled)
        scaled_w.append(w[lead][scaled])
        rest_src.append(b * T + pos[~lead])
        rest_dst.append(out + slot[~lead])
        rest_w.append(w[~lead])
        sentences.append(r.sentence)
        counts.append(int(plan.counts[r.sentence]))
        out += counts[-1]

    def packed(parts: list[np.ndarray], dtype) -> tuple[torch.Tensor, list[int]]:
        t = torch.from_numpy(np.concatenate([np.asarray(p, dtype).reshape(-1) for p in parts]))
        return (t.pin_memory() if pin else t), [int(np.size(p)) for p in parts]

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0)

    ints, int_sizes = packed([ids, mask, *map(cat, (lead_src, scaled_at, rest_src, rest_dst))], np.int64)
    floats, float_sizes = packed([cat(scaled_w), cat(rest_w)], np.float32)
    if pin:
        long = [(s, *(t.pin_memory() for t in parts)) for s, *parts in long]
    return BatchPlan(
        rows=row_ids,
        shape=ids.shape,
        ints=ints,
        int_sizes=int_sizes,
        floats=floats,
        float_sizes=float_sizes,
        sentences=np.asarray([plan.sentences[s] for s in sentences], np.int64),
        counts=np.asarray(counts, np.int64),
        long=long,
    )


def plan_chunk(emb, sentences: Sequence[Sequence[str]], keep: Sequence[np.ndarray] | None) -> ChunkPlan:
    """Check and tokenize a chunk, cut its rows and plan every batch (host work; runs in a worker thread)."""
    sentences = emb._checked(sentences)
    check_keep(sentences, keep)
    nonempty = [i for i, s in enumerate(sentences) if s]
    empty = [i for i, s in enumerate(sentences) if not s]
    words = [sentences[i] for i in nonempty]
    rows, piece_words = emb._rows(words, check=False) if words else ([], [])  # the dataset was checked whole
    weights = [piece_weights(w_of, len(s), emb.pooling) for w_of, s in zip(piece_words, words)]
    slots = []
    for k, i in enumerate(nonempty):
        slot = np.arange(len(words[k]))
        if keep is not None:
            slot = np.full(len(words[k]), -1)
            slot[keep[i]] = np.arange(len(keep[i]))
        slots.append(slot)
    counts = np.array([int((s >= 0).sum()) for s in slots], np.int64)
    per_sentence = np.bincount([r.sentence for r in rows], minlength=len(words))
    rows_left = {int(s): int(n) for s, n in enumerate(per_sentence) if n > 1}
    plan = ChunkPlan(rows, weights, slots, counts, rows_left, nonempty, [], empty)
    pin = emb.device.type == "cuda"
    plan.batches = [plan_batch(emb, plan, b, pin) for b in emb._batches(rows, False)]
    return plan


def _pool(emb, bp: BatchPlan, dtype: torch.dtype) -> tuple[torch.Tensor, list]:
    """Forward one batch; its completed words in ``dtype`` (layers, n, D) on the device, and the float32
    parts of multi-row sentences [(sentence, slots, (layers, n, D))] not yet added."""
    dev = emb.device
    t = bp.on(dev)
    hidden, _ = emb._run_tensors(t["ids"], t["mask"], False)
    states = hidden if emb.layer_ids is None else [hidden[i] for i in emb.layer_ids]
    lead_src, scaled, scaled_w = t["lead_src"], t["scaled"], t["scaled_w"]
    rest_src, rest_dst, rest_w = t["rest_src"], t["rest_dst"], t["rest_w"]
    out = torch.empty(len(states), bp.num_words, emb.dim, dtype=dtype, device=dev)
    long_idx = [(s, *(x.to(dev, non_blocking=True) for x in xs)) for s, *xs in bp.long]
    long_parts = [(s, slot, torch.empty(len(states), len(slot), emb.dim, device=dev)) for s, _, slot, _ in long_idx]
    for j, h in enumerate(states):
        flat = h.reshape(-1, emb.dim)
        x = flat.index_select(0, lead_src)
        # in float32, as embed pools: weight × first piece, plus the others in order
        if len(scaled) or len(rest_src) or x.dtype != dtype:
            x = x.float()
            if len(scaled):
                x.index_copy_(0, scaled, x.index_select(0, scaled) * scaled_w)
            if len(rest_src):
                x.index_add_(0, rest_dst, flat.index_select(0, rest_src).float() * rest_w)
        out[j].copy_(x)
        for (_, src, _, w), (_, _, part) in zip(long_idx, long_parts):
            part[j] = flat.index_select(0, src).float() * w
    return out, long_parts


def _hand_over(block: torch.Tensor) -> tuple[torch.Tensor, torch.cuda.Event | None, torch.Tensor | None]:
    """``block`` on the CPU: on a GPU one non-blocking copy into pinned memory, with whether it is finite
    (checked on the device, so the host need not read the bytes) and the event to wait for."""
    if block.device.type != "cuda":
        return block, None, None
    host = torch.empty(block.shape, dtype=block.dtype, pin_memory=True)
    host.copy_(block, non_blocking=True)
    finite = torch.empty((), dtype=torch.bool, pin_memory=True)
    finite.copy_(torch.isfinite(block).all(), non_blocking=True)
    event = torch.cuda.Event()
    event.record(torch.cuda.current_stream(block.device))  # the copies' stream: on cuda:N not the current device's
    return host, event, finite


def run_chunk(emb, plan: ChunkPlan, dtype: torch.dtype) -> Iterator[RowBlock]:
    """The chunk's blocks, each handed over after the next batch was launched (module doc)."""
    todo = list(plan.batches)
    acc: dict[int, torch.Tensor] = {}  # multi-row sentence -> (layers, kept words, D) float32
    pending: list[tuple[RowBlock, torch.cuda.Event | None, torch.Tensor | None]] = []

    def handed(block: RowBlock, event: torch.cuda.Event | None, finite: torch.Tensor | None) -> RowBlock:
        if event is not None:
            event.synchronize()
            block.finite = bool(finite)
        return block

    while todo:
        bp = todo[0]
        pooled, oom = run_or_oom(_pool, emb, bp, dtype)
        if oom is not None:  # nothing of this batch was added yet: re-run it smaller
            batches = repack_after_oom(emb, oom, plan.rows, [b.rows for b in todo], False)
            todo = [plan_batch(emb, plan, b, emb.device.type == "cuda") for b in batches]
            continue
        out, long_parts = pooled
        todo.pop(0)
        ready = [(bp.sentences, bp.counts, *_hand_over(out))]
        for s, slot, part in long_parts:  # in batch order, as embed sums them
            if s not in acc:
                acc[s] = torch.zeros(part.shape[0], int(plan.counts[s]), emb.dim, device=emb.device)
            acc[s].index_add_(1, slot, part)
            plan.rows_left[s] -= 1
            if plan.rows_left[s] == 0:
                done = acc.pop(s).to(dtype)
                ready.append((np.array([plan.sentences[s]]), plan.counts[s : s + 1], *_hand_over(done)))
        while pending:  # the blocks of the batch before: handed over now that this one runs
            yield handed(*pending.pop(0))
        pending = [
            (RowBlock(sentences, counts, rows), event, finite) for sentences, counts, rows, event, finite in ready
        ]
    while pending:
        yield handed(*pending.pop(0))


Chunks = Iterable[tuple[Sequence[Sequence[str]], Sequence[np.ndarray] | None]]


def planned(emb, chunks: Chunks, ahead: int | None = None) -> Iterator[ChunkPlan]:
    """Chunk plans in order. ``ahead`` chunks (default on a GPU: a quarter of the cores, 1 to 4) are planned in
    worker threads while the device runs the current one: the tokenizer releases the GIL, so they tokenize in
    parallel. 0: inline (the default on the CPU, where the forward's threads use every core)."""
    chunks = iter(chunks)
    if ahead is None:
        ahead = min(4, max(1, (os.cpu_count() or 1) // 4)) if emb.device.type == "cuda" else 0
    if ahead <= 0:
        yield from (plan_chunk(emb, *chunk) for chunk in chunks)
        return
    with ThreadPoolExecutor(max_workers=ahead, thread_name_prefix="plan-chunk") as pool:
        futures: deque[Future] = deque(pool.submit(plan_chunk, emb, *c) for c in islice(chunks, ahead))
        while futures:
            plan = futures.popleft().result()
            futures.extend(pool.submit(plan_chunk, emb, *c) for c in islice(chunks, 1))
            yield plan


def stream_rows(emb, chunks: Chunks, dtype: torch.dtype, ahead: int | None = None) -> Iterator[tuple[int, RowBlock]]:
    """``Embedder.embed_rows`` for transformers (module doc)."""
    for c, plan in enumerate(planned(emb, chunks, ahead)):
        if plan.empty:  # every sentence of a chunk once, as the contract says: the empty ones with no rows
            none = torch.zeros(emb.num_layers, 0, emb.dim, dtype=dtype)
            yield c, RowBlock(np.asarray(plan.empty, np.int64), np.zeros(len(plan.empty), np.int64), none)
        with torch.inference_mode():
            for block in run_chunk(emb, plan, dtype):
                yield c, block
