"""The GPT-2 trainer's parts: word-level tokenizer, token stream, model, schedule, loop, evaluation.

Used by ``models.train.gpt`` (the command line, ``python -m models train gpt``); see its docstring
for the recipe. Shapes: the token stream is (num_tokens,) int32; a batch is (batch, context) int64.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

import numpy as np
import torch
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import WordLevel
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


# ----------------------------------------------------------------------------- tokenizer
def build_word_tokenizer(vocab: dict[str, int], max_size: int = 20_000, lowercase: bool = True):
    """Word-level fast tokenizer over the ``max_size`` most frequent words (specials included).

    vocab: word -> count. With ``lowercase`` the counts of case variants are merged and a
    Lowercase normalizer is part of the saved tokenizer, so callers may feed raw words.
    """
    counts: dict[str, int] = {}
    for word, c in vocab.items():
        key = word.lower() if lowercase else word
        if key in SPECIALS or not key.strip():
            continue
        counts[key] = counts.get(key, 0) + int(c)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: max(0, max_size - len(SPECIALS))]
    ids = {tok: i for i, tok in enumerate(SPECIALS)}
    for word, _ in ranked:
        ids[word] = len(ids)
    tok = Tokenizer(WordLevel(vocab=ids, unk_token="<unk>"))
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    # Whitespace*Split*: the corpus is tokenized already; "don't"-style tokens stay one word.
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=1_000_000,
    )


def encode_stream(sentences: Iterable[Sequence[str]], tokenizer, lowercase: bool = True) -> np.ndarray:
    """``<s> w1 … wn </s>`` for every sentence, concatenated: (num_tokens,) int32.

    A dict lookup per word (not the tokenizer's batch API) because the corpus is pre-tokenized:
    identical to what the WordLevel model does, and fast for millions of words.
    """
    vocab = tokenizer.get_vocab()
    unk, bos, eos = vocab["<unk>"], vocab["<s>"], vocab["</s>"]
    out: list[int] = []
    for sent in sentences:
        out.append(bos)
        out.extend(vocab.get(w.lower() if lowercase else w, unk) for w in sent)
        out.append(eos)
    return np.asarray(out, dtype=np.int32)


# ----------------------------------------------------------------------------- model
def build_model(
    vocab_size: int,
    d_model: int = 128,
    n_layer: int = 4,
    n_head: int = 4,
    context: int = 128,
    dropout: float = 0.1,
    tokenizer=None,
) -> GPT2LMHeadModel:
    ids = tokenizer.get_vocab() if tokenizer is not None else {}
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=context,
        n_embd=d_model,
        n_layer=n_layer,
        n_head=n_head,
        n_inner=4 * d_model,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        bos_token_id=ids.get("<s>", 2),
        eos_token_id=ids.get("</s>", 3),
        pad_token_id=ids.get("<pad>", 0),
        tie_word_embeddings=True,
    )
    return GPT2LMHeadModel(config)


def lr_at(step: int, total: int, warmup: int, peak: float, floor_ratio: float = 0.1) -> float:
    """Linear warm-up to ``peak`` then cosine decay to ``floor_ratio * peak`` at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (floor_ratio + (1 - floor_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def sample_blocks(stream: np.ndarray, batch_size: int, context: int, rng: np.random.Generator) -> torch.Tensor:
    """(batch_size, context) random contiguous blocks of the token stream."""
    starts = rng.integers(0, len(stream) - context, size=batch_size)
    return torch.from_numpy(np.stack([stream[s : s + context] for s in starts]).astype(np.int64))


@torch.inference_mode()
def evaluate(
    model,
    stream: np.ndarray,
    context: int,
    device: torch.device,
    batch_size: int = 32,
    max_tokens: int | None = None,
    skip: int | None = None,
) -> tuple[float, int]:
    """Mean NLL (nats) over the held-out stream cut into consecutive non-overlapping blocks.

    Returns (mean_nll, predicted_tokens). Every token but each block's first is a target, except ``skip``: the
    ``<s>`` that always follows ``</s>`` (0.0003 nats, a free target; word-level WikiText counts words and the
    end of a sentence only).
    """
    model.eval()
    n_blocks = len(stream) // context
    if max_tokens is not None:
        n_blocks = min(n_blocks, max(1, max_tokens // context))
    if n_blocks == 0:  # held-out shorter than one block: one short block
        blocks = torch.from_numpy(stream.astype(np.int64))[None]
    else:
        blocks = torch.from_numpy(stream[: n_blocks * context].astype(np.int64)).view(n_blocks, context)
    total, count = 0.0, 0
    for i in range(0, len(blocks), batch_size):
        x = blocks[i : i + batch_size].to(device)
        logits = model(input_ids=x).logits.float()
        targets = x[:, 1:].reshape(-1)
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)),
            targets,
            reduction="sum",
            ignore_index=-100 if skip is None else skip,
        )
        total += nll.item()
        count += int((targets != skip).sum()) if skip is not None else targets.numel()
    model.train()
    return total / max(1, count), count


def train_steps(
    model,
    stream: np.ndarray,
    steps: int,
    *,
    batch_size: int,
    context: int,
    lr: float,
    warmup: int,
    weight_decay: float = 0.01,
    clip: float = 1.0,
    seed: int = 0,
    device: torch.device | None = None,
    start_step: int = 0,
    optimizer=None,
    rng: np.random.Generator | None = None,
    log_every: int = 50,
    on_step=None,
    total_steps: int | None = None,
    max_seconds: float | None = None,
    prior_seconds: float = 0.0,
) -> list[float]:
    """Run up to ``steps`` optimisation steps from ``start_step``; returns the per-step training losses.

    ``on_step(step, loss, optimizer, rng)`` is called after every step (checkpointing, logging).
    With ``max_seconds`` (the whole run's budget; ``prior_seconds`` of it spent before a resume) the schedule's
    progress is max(step fraction, time fraction) and training stops when the time is spent, so the cosine decay
    still completes on a slow or busy machine, and a resumed run goes on where the interrupted one was.
    """
    device = device or next(model.parameters()).device
    total_steps = total_steps or (start_step + steps)
    if optimizer is None:
        optimizer = make_optimizer(model, lr, weight_decay)
    rng = rng or np.random.default_rng(seed)
    model.train()
    half = autocast_bf16(device)
    losses: list[float] = []
    t0 = time.time()
    for step in range(start_step, start_step + steps):
        sched_step = step
        if max_seconds is not None:
            elapsed = prior_seconds + time.time() - t0
            if elapsed >= max_seconds:
                print(f"time budget of {max_seconds:.0f}s spent after {step} steps", flush=True)
                break
            sched_step = max(step, int(total_steps * elapsed / max_seconds))
        for group in optimizer.param_groups:
            group["lr"] = lr_at(sched_step, total_steps, warmup, lr)
        x = sample_blocks(stream, batch_size, context, rng)
        if device.type == "cuda":
            x = x.pin_memory().to(device, non_blocking=True)
        else:
            x = x.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=half):
            loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if log_every and (step + 1) % log_every == 0:
            recent = float(np.mean(losses[-log_every:]))
            rate = (step + 1 - start_step) * batch_size * context / (time.time() - t0)
            print(
                f"step {step + 1}/{total_steps}  loss {recent:.3f}  ppl {math.exp(recent):.1f}  "
                f"lr {optimizer.param_groups[0]['lr']:.2e}  {rate:,.0f} tok/s",
                flush=True,
            )
        if on_step is not None:
            on_step(step + 1, losses[-1], optimizer, rng)
    return losses


def autocast_bf16(device: torch.device) -> bool:
    """Whether the forward runs under bf16 autocast: on a GPU that has bf16 in hardware (Ampere and later). CPU
    half precision is slow and inexact; a V100 or T4 only emulates bf16 (slowly), and fp16 there would need a loss
    scaler this loop does not have, so those train in float32 (said once)."""
    if device.type != "cuda":
        return False
    if torch.cuda.is_bf16_supported(including_emulation=False):
        return True
    print(f"{torch.cuda.get_device_name(device)} has no bf16 in hardware: training in float32", flush=True)
    return False


def make_optimizer(model, lr: float, weight_decay: float):
    # No decay on biases, LayerNorm weights and embeddings (the usual GPT-2 recipe).
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 and "wte" not in name and "wpe" not in name else no_decay).append(p)
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )
