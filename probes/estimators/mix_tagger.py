"""The task model of the scalar-mix λ ablation (Peters et al. 2018, Table 2), and its probe.

A small tagger on frozen representations learns the ELMo mix (s, γ) jointly with a linear classifier:

    h_i   = γ · Σ_j s_j · norm_j(x_{i,j})                 (models.scalar_mix.ScalarMix)
    z_i   = [glove_{i-1}; h_{i-1}; glove_i; h_i; glove_{i+1}; h_{i+1}]   (window ±1, zeros at edges)
    logits = W z_i + b,      loss = cross-entropy + λ · ‖s − mean(s)‖²

The penalty is on the softmax weights s, not on the raw w as the paper's (λ‖w‖²): our λ = 1 pulls about as hard as
its λ ≈ 0.1 for three layers (``models.scalar_mix.ScalarMix.weight_penalty`` has the measurements).

``norm_j`` standardises each layer by one mean and one standard deviation measured on the training
tokens (a fixed version of ScalarMix's layer norm, so layers of very different scale can be mixed).
Chunking is scored by chunk-level F1 as conlleval defines it (``seqeval``'s default mode).
Training is ``probes.estimators.classifier.train_with_early_stopping`` (held-out tenth of the sentences).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from seqeval.metrics import f1_score
from torch import nn

from models.base import default_device, seeded
from models.scalar_mix import ScalarMix
from probes.estimators.classifier import train_with_early_stopping


def chunk_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """conlleval chunk F1 (percent) over sentences of BIO tags (seqeval's default, conlleval mode)."""
    if sum(len(s) for s in gold) == 0:
        raise ValueError("Cannot score chunking on zero tokens.")
    return 100.0 * float(f1_score([list(s) for s in gold], [list(s) for s in pred]))


def window_index(offsets: np.ndarray, width: int = 1) -> np.ndarray:
    """(num_tokens, 2·width+1) row of each token's neighbours in the same sentence, -1 beyond its edges.

    offsets: (num_sentences + 1,) sentence boundaries in the flat token order.
    """
    n = int(offsets[-1])
    rows = np.arange(n)
    sent = np.searchsorted(offsets, rows, side="right") - 1
    lo, hi = offsets[sent], offsets[sent + 1]
    cols = []
    for d in range(-width, width + 1):
        r = rows + d
        cols.append(np.where((r >= lo) & (r < hi), r, -1))
    return np.stack(cols, axis=1)


class MixTagger(nn.Module):
    """ScalarMix over contextual layers (optional) + static vectors, windowed linear tag classifier.

    num_ctx_layers: 0 for the static-only baseline.
    """

    def __init__(self, num_ctx_layers: int, ctx_dim: int, static_dim: int, num_tags: int, window: int = 1) -> None:
        super().__init__()
        self.mix = ScalarMix(num_ctx_layers) if num_ctx_layers else None
        feat = (ctx_dim if num_ctx_layers else 0) + static_dim
        self.out = nn.Linear(feat * (2 * window + 1), num_tags)

    def forward(self, ctx: torch.Tensor | None, static: torch.Tensor | None) -> torch.Tensor:
        """ctx: (L, B, W, d) or None; static: (B, W, ds) or None -> logits (B, num_tags)."""
        parts = []
        if static is not None:
            parts.append(static)
        if self.mix is not None and ctx is not None:
            parts.append(self.mix(ctx))  # (B, W, d)
        z = torch.cat(parts, dim=-1)  # (B, W, ds + d)
        return self.out(z.flatten(1))

    def penalty(self) -> torch.Tensor:
        return self.mix.weight_penalty() if self.mix is not None else torch.zeros(())


@dataclass
class TokenData:
    """Flat token-level inputs of one split.

    ctx: (L, N, d) float16 tensor of standardised contextual layers, or None.
    static: (N, ds) float32 tensor, or None.
    offsets: (num_sentences + 1,) sentence boundaries; labels: (N,) label strings.
    """

    ctx: torch.Tensor | None
    static: torch.Tensor | None
    offsets: np.ndarray
    labels: np.ndarray
    window: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.window = window_index(self.offsets)


def standardise_layers(
    train_layers: list[np.ndarray], test_layers: list[np.ndarray]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack layers as (L, N, d) float16, each scaled by the train split's scalar mean/std."""
    tr, te = [], []
    for a, b in zip(train_layers, test_layers):
        a32 = np.asarray(a, dtype=np.float32)
        mu, sd = float(a32.mean()), float(a32.std()) + 1e-6
        tr.append(torch.from_numpy(((a32 - mu) / sd).astype(np.float16)))
        tr_b = np.asarray(b, dtype=np.float32)
        te.append(torch.from_numpy(((tr_b - mu) / sd).astype(np.float16)))
    return torch.stack(tr), torch.stack(te)


class MixProbe:
    """Trains a MixTagger for one row of the ablation; scikit-learn style fit/predict/score.

    Args:
        lam: λ of the mix-weight penalty (ignored when there is no mix or a single layer).
        epochs, batch_size, lr: Adam training; early stopping on a held-out tenth of the
            training sentences (token accuracy), patience 2.
    """

    def __init__(
        self,
        lam: float = 0.0,
        epochs: int = 10,
        batch_size: int = 2048,
        lr: float = 1e-2,
        seed: int = 0,
        device: str | torch.device | None = None,
        patience: int = 2,
    ) -> None:
        self.lam = lam
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.seed = seed
        self.patience = patience
        self.device = torch.device(device) if device is not None else default_device()
        self.model_: MixTagger | None = None
        self.classes_: np.ndarray | None = None

    def _batch(self, data: TokenData, rows: np.ndarray):
        win = torch.as_tensor(data.window[rows])  # (B, W), -1 = outside sentence
        valid = (win >= 0).unsqueeze(-1)
        safe = win.clamp(min=0)
        ctx = static = None
        if data.ctx is not None:
            ctx = data.ctx[:, safe].float() * valid.float()  # (L, B, W, d)
            ctx = ctx.to(self.device)
        if data.static is not None:
            static = (data.static[safe] * valid.float()).to(self.device)  # (B, W, ds)
        return ctx, static

    def fit(self, data: TokenData) -> MixProbe:
        if len(data.labels) == 0:
            raise ValueError("Cannot fit on zero tokens.")
        with seeded(self.seed):  # the model's initial weights draw from torch's generator
            return self._fit(data)

    def _fit(self, data: TokenData) -> MixProbe:
        gen = torch.Generator().manual_seed(self.seed)
        self.classes_, y = np.unique(data.labels, return_inverse=True)
        y = torch.as_tensor(y)
        L = 0 if data.ctx is None else data.ctx.shape[0]
        d = 0 if data.ctx is None else data.ctx.shape[2]
        ds = 0 if data.static is None else data.static.shape[1]
        self.model_ = MixTagger(L, d, ds, len(self.classes_)).to(self.device)
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr)
        # Held-out sentences for early stopping.
        n_sent = len(data.offsets) - 1
        sperm = torch.randperm(n_sent, generator=gen).numpy()
        n_val = max(1, n_sent // 10) if n_sent >= 10 else 0
        sent_of = np.searchsorted(data.offsets, np.arange(len(y)), side="right") - 1
        is_val = np.isin(sent_of, sperm[:n_val])
        tr_rows, val_rows = np.flatnonzero(~is_val), np.flatnonzero(is_val)
        y_val = y[val_rows].numpy()

        def batch_loss(rows: np.ndarray) -> torch.Tensor:
            ctx, static = self._batch(data, rows)
            loss = nn.functional.cross_entropy(self.model_(ctx, static), y[rows].to(self.device))
            return loss + self.lam * self.model_.penalty()

        def val_accuracy() -> float:
            return float((self._predict_idx(data, val_rows) == y_val).mean())

        self.history_ = train_with_early_stopping(
            self.model_,
            opt,
            tr_rows,
            batch_loss,
            val_accuracy if len(val_rows) else None,
            epochs=self.epochs,
            batch_size=self.batch_size,
            patience=self.patience,
            generator=gen,
        )
        return self

    @torch.inference_mode()
    def _predict_idx(self, data: TokenData, rows: np.ndarray) -> np.ndarray:
        self.model_.eval()
        out = []
        for start in range(0, len(rows), 4096):
            ctx, static = self._batch(data, rows[start : start + 4096])
            out.append(self.model_(ctx, static).argmax(1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def predict(self, data: TokenData) -> np.ndarray:
        if self.model_ is None:
            raise RuntimeError("Call fit() before predict().")
        return self.classes_[self._predict_idx(data, np.arange(len(data.labels)))]

    def mix_weights(self) -> dict:
        """Learned s (softmax weights) and γ, or {} for the static baseline."""
        if self.model_ is None or self.model_.mix is None:
            return {}
        return {
            "s": [round(float(v), 4) for v in self.model_.mix.weights.detach().cpu()],
            "gamma": round(float(self.model_.mix.gamma.detach().cpu()), 4),
        }
