"""GloVe (Pennington, Socher & Manning, 2014) trained in PyTorch on the project's LM corpus.

    python -m models train glove [--dim 100 --epochs 15 --max-vocab 40000 ...]   -> assets/glove-lm/

As in the reference implementation (``glove.c`` / ``cooccur.c``):

- co-occurrence counts X_ij over a symmetric window of 10 words, each pair weighted 1/d for
  words d apart; counting restarts at every sentence; out-of-vocabulary words are dropped
  before counting (distances are measured over vocabulary words);
- loss  J = Σ_ij f(X_ij) (w_i·w̃_j + b_i + b̃_j − log X_ij)² / 2 over the non-zero X_ij, with
  f(x) = (x / x_max)^α for x < x_max, else 1 (x_max = 100, α = 0.75);
- AdaGrad as glove.c writes it: the gradient scaled by the learning rate (0.05) first, each step
  divided by the root of the accumulator *before* the step's square is added, accumulators starting
  at 1 (not ``torch.optim.Adagrad``, which adds first and accumulates unscaled squares: an
  accumulator growing 1/lr² = 400× faster, and once it dominates a step 1/lr = 20× smaller);
  parameters initialised uniformly in [−0.5, 0.5] / dim;
- the saved vectors are w + w̃.

The non-zeros are visited in a fresh random order every epoch in minibatches of 32,768 (glove.c
uses per-pair Hogwild updates across threads; minibatches with a summed loss are the
GPU-friendly equivalent: a row a batch touches several times gets their summed gradient). The
AdaGrad step is written out in closed form over the rows a batch touches
(``GloVeModel.adagrad_step``), several times faster on CPU than autograd. Runs on CUDA when
present, else CPU. The default run (``--epochs 15``) was shortened to 10 epochs for the shipped
asset (see docs/models.md).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from corpora.cli_help import state_defaults
from corpora.lm_corpus import load_lm_corpus
from models.assets import ASSETS, check_replaceable
from models.base import default_device
from models.quality import card_quality
from models.static import StaticEmbedder, save_static_dir
from models.train.common import (
    check_vocabulary,
    device_arg,
    machine_description,
    nonnegative_int,
    positive_float,
    positive_int,
    utc_now,
)


def build_vocab(sentences: Sequence[Sequence[str]], min_count: int = 5, max_vocab: int | None = None) -> list[str]:
    """Words seen at least ``min_count`` times, most frequent first (ties alphabetical), capped."""
    counts = Counter(w for s in sentences for w in s)
    words = [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count]
    return words[:max_vocab] if max_vocab else words


def cooccurrence(sentences: Sequence[Sequence[str]], vocab: Sequence[str], window: int = 10) -> sp.coo_matrix:
    """Symmetric distance-weighted co-occurrence counts.

    Returns:
        (V, V) scipy COO matrix, float64: X[i, j] = Σ over occurrences of i and j within
        ``window`` words of each other in one sentence of 1 / distance.
    """
    index = {w: i for i, w in enumerate(vocab)}
    ids, sent = [], []
    for k, s in enumerate(sentences):
        row = [index[w] for w in s if w in index]
        ids.extend(row)
        sent.extend([k] * len(row))
    ids_a = np.asarray(ids, dtype=np.int64)
    sent_a = np.asarray(sent, dtype=np.int64)
    V = len(vocab)
    X = sp.csr_matrix((V, V), dtype=np.float64)
    for d in range(1, window + 1):
        same = sent_a[:-d] == sent_a[d:]  # both words in the same sentence
        if not same.any():
            break
        left, right = ids_a[:-d][same], ids_a[d:][same]
        X = X + sp.coo_matrix((np.full(len(left), 1.0 / d), (left, right)), shape=(V, V)).tocsr()
    X = X + X.T  # symmetric window: count both directions
    return X.tocoo()


class GloVeModel(nn.Module):
    """Word and context vectors with biases; ``forward`` predicts log co-occurrence.

    Parameters:
        w, w_tilde: (V, dim) word / context vectors;  b, b_tilde: (V,) biases.
    Buffers (AdaGrad state): the squared-gradient sums of each parameter, same shapes, starting at 1.
    """

    def __init__(self, vocab_size: int, dim: int) -> None:
        super().__init__()
        init = lambda *shape: nn.Parameter(
            torch.empty(*shape).uniform_(-0.5 / dim, 0.5 / dim),  # glove.c's init
            requires_grad=False,
        )
        self.w, self.w_tilde = init(vocab_size, dim), init(vocab_size, dim)
        self.b, self.b_tilde = init(vocab_size), init(vocab_size)
        for name in ("w", "w_tilde", "b", "b_tilde"):
            self.register_buffer(f"gsq_{name}", torch.ones_like(getattr(self, name)))

    def forward(self, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        """i, j: (B,) word / context ids -> (B,) w_i·w̃_j + b_i + b̃_j."""
        return (self.w[i] * self.w_tilde[j]).sum(-1) + self.b[i] + self.b_tilde[j]

    def word_vectors(self) -> torch.Tensor:
        """(V, dim) final vectors w + w̃."""
        return (self.w + self.w_tilde).detach()

    @torch.no_grad()
    def adagrad_step(self, i: torch.Tensor, j: torch.Tensor, log_x: torch.Tensor, fx: torch.Tensor, lr: float) -> float:
        """One AdaGrad step on the batch loss Σ f(X_ij)(pred − log X_ij)² / 2; returns that loss.

        i, j, log_x, fx: (B,). The gradients are written out in closed form (d loss / d w_i =
        f·diff·w̃_j, …) and summed per row, so only the rows in the batch are touched. glove.c's
        update: u = lr·g, param −= u / √G, then G += u² (G starts at 1).
        """
        wi, wj = self.w[i], self.w_tilde[j]  # (B, dim)
        diff = (wi * wj).sum(-1) + self.b[i] + self.b_tilde[j] - log_x
        fdiff = fx * diff  # (B,)
        loss = 0.5 * float((fdiff * diff).sum())
        # Sum the gradients of repeated rows (one unique() per side serves vector and bias).
        for ids, updates in (
            (i, ((self.w, self.gsq_w, fdiff[:, None] * wj), (self.b, self.gsq_b, fdiff))),
            (j, ((self.w_tilde, self.gsq_w_tilde, fdiff[:, None] * wi), (self.b_tilde, self.gsq_b_tilde, fdiff))),
        ):
            rows, inverse = torch.unique(ids, return_inverse=True)
            for param, gsq, grad in updates:
                u = lr * grad.new_zeros((len(rows),) + grad.shape[1:]).index_add_(0, inverse, grad)
                acc = gsq[rows]
                param[rows] -= u / acc.sqrt()
                gsq[rows] = acc + u * u
        return loss


def glove_loss(pred: torch.Tensor, log_x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Σ f(X_ij) (pred − log X_ij)² / 2 over the batch; pred, log_x, weight: (B,)."""
    return 0.5 * (weight * (pred - log_x) ** 2).sum()


def weighting(x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """f(x) = (x / x_max)^alpha for x < x_max, else 1."""
    return torch.where(x < x_max, (x / x_max) ** alpha, torch.ones_like(x))


def train_glove(
    X: sp.coo_matrix,
    dim: int = 100,
    epochs: int = 15,
    lr: float = 0.05,
    x_max: float = 100.0,
    alpha: float = 0.75,
    batch_size: int = 32_768,
    seed: int = 0,
    device: torch.device | None = None,
    max_minutes: float | None = None,
    log=print,
) -> tuple[GloVeModel, list[float]]:
    """Fit GloVe to co-occurrence matrix ``X`` ((V, V) sparse). Returns (model, per-epoch mean cost).

    ``max_minutes``: stop after the epoch during which this much time has passed (len(losses)
    then tells how many epochs ran).

    The per-epoch cost is glove.c's: Σ f(X_ij)(…)² / 2 over the epoch divided by the number of
    non-zeros, accumulated while training (so it lags the end-of-epoch parameters slightly).
    """
    device = device or default_device()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    X = X.tocoo()
    rows = torch.from_numpy(X.row.astype(np.int64)).to(device)
    cols = torch.from_numpy(X.col.astype(np.int64)).to(device)
    vals = torch.from_numpy(X.data.astype(np.float32)).to(device)
    if len(vals) == 0:
        raise ValueError("the co-occurrence matrix is empty (corpus too small for the vocabulary?)")
    log_x, fx = torch.log(vals), weighting(vals, x_max, alpha)
    model = GloVeModel(X.shape[0], dim).to(device)
    nnz, losses, t0 = len(vals), [], time.time()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(nnz, generator=gen).to(device)
        total = 0.0
        for start in range(0, nnz, batch_size):
            idx = perm[start : start + batch_size]
            total += model.adagrad_step(rows[idx], cols[idx], log_x[idx], fx[idx], lr)
        losses.append(total / nnz)
        log(f"  epoch {epoch}/{epochs}  cost {losses[-1]:.4f}  {time.time() - t0:6.1f}s")
        if max_minutes is not None and time.time() - t0 > 60 * max_minutes and epoch < epochs:
            log(f"  stopping after {epoch} epochs: --max-minutes {max_minutes} reached")
            break
    return model, losses


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m models train glove", description="Train GloVe in torch (GPU if present) on the LM corpus."
    )
    p.add_argument("--out", type=Path, default=None, help="output directory (default assets/glove-lm/)")
    p.add_argument("--dim", type=positive_int, default=100)
    p.add_argument("--epochs", type=positive_int, default=15)
    p.add_argument("--window", type=positive_int, default=10)
    p.add_argument("--x-max", type=positive_float, default=100.0)
    p.add_argument("--alpha", type=positive_float, default=0.75)
    p.add_argument("--lr", type=positive_float, default=0.05)
    p.add_argument("--batch-size", type=positive_int, default=32_768)
    p.add_argument(
        "--max-minutes", type=positive_float, default=None, help="stop after the epoch that passes this time"
    )
    p.add_argument("--min-count", type=nonnegative_int, default=5)
    p.add_argument("--max-vocab", type=positive_int, default=40_000)
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lowercase", action="store_true")
    p.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    p.add_argument("--device", type=device_arg, default=None, help="cpu | cuda (default: cuda when available)")
    return state_defaults(p)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    out = args.out or ASSETS / "glove-lm"
    out = check_replaceable(out)  # before the training, not after it
    torch.set_num_threads(args.threads)
    t0 = time.time()
    print(f"[glove-lm] loading LM corpus (lowercase={args.lowercase}, max_sentences={args.max_sentences})", flush=True)
    corpus = load_lm_corpus(
        lowercase=args.lowercase, max_sentences=args.max_sentences
    )  # fixed split; --seed seeds training
    vocab = build_vocab(corpus.train, args.min_count, args.max_vocab)
    print(
        f"[glove-lm] {len(corpus.train):,} sentences, {corpus.num_train_tokens:,} tokens, vocab {len(vocab):,}",
        flush=True,
    )
    t1 = time.time()
    X = cooccurrence(corpus.train, vocab, args.window)
    print(f"[glove-lm] co-occurrence matrix: {X.nnz:,} non-zeros ({time.time() - t1:.1f}s)", flush=True)
    check_vocabulary(len(vocab), X.nnz)
    device = torch.device(args.device) if args.device else default_device()
    print(f"[glove-lm] training on {device}", flush=True)
    t2 = time.time()
    model, losses = train_glove(
        X,
        dim=args.dim,
        epochs=args.epochs,
        lr=args.lr,
        x_max=args.x_max,
        alpha=args.alpha,
        batch_size=args.batch_size,
        seed=args.seed,
        device=device,
        max_minutes=args.max_minutes,
        log=lambda m: print(f"[glove-lm]{m}", flush=True),
    )
    train_time = time.time() - t2
    emb = StaticEmbedder(
        "glove-lm", vocab, model.word_vectors().cpu().numpy(), source="models.train.glove", device="cpu"
    )
    quality = card_quality(emb, log=lambda m: print(f"[glove-lm]{m}", flush=True))
    card = {
        "name": "glove-lm",
        "family": "static",
        "description": "GloVe trained here in torch on the LM corpus (vectors w + w̃)",
        "corpus": "LM corpus (corpora.lm_corpus): " + ", ".join(corpus.sources) + " — train split",
        "corpus_tokens": corpus.num_train_tokens,
        "corpus_sentences": len(corpus.train),
        "lowercased": args.lowercase,
        "vocab_size": len(vocab),
        "cooccurrence_nnz": int(X.nnz),
        "params": int(emb.vectors.numel()),  # what the asset stores (w + w̃), as the word2vec cards count
        "trained_params": int(sum(p.numel() for p in model.parameters())),  # w, w̃ and both biases
        "dim": args.dim,
        "layers": 1,
        "epochs": len(losses),
        "steps": len(losses) * -(-X.nnz // args.batch_size),
        "hyperparameters": {
            "window": args.window,
            "x_max": args.x_max,
            "alpha": args.alpha,
            "lr": args.lr,
            "optimizer": "AdaGrad as glove.c (lr-scaled gradients, accumulators start at 1)",
            "batch_size": args.batch_size,
            "min_count": args.min_count,
            "max_vocab": args.max_vocab,
            "seed": args.seed,
        },
        "wall_time_s": round(train_time, 1),
        "cooccurrence_time_s": round(t2 - t1, 1),
        "final_loss": round(losses[-1], 5),
        "epoch_losses": [round(loss, 5) for loss in losses],
        "loss_note": "glove.c cost: mean over non-zeros of f(X_ij)(w_i·w̃_j + b_i + b̃_j − log X_ij)² / 2",
        "quality": quality,
        "command": "python -m models train glove " + " ".join(shlex.quote(a) for a in argv),
        "date": utc_now(),
        "machine": machine_description() + f", trained on {device}",
    }
    save_static_dir(emb, out, card)
    size = sum(f.stat().st_size for f in Path(out).iterdir())
    print(f"[glove-lm] wrote {out} ({size / 1e6:.1f} MB) in {time.time() - t0:.1f}s total", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
