"""The scalar-mix λ ablation of Peters et al. (2018, Table 2) on CoNLL-2000 POS tagging and chunking.

A small task model on frozen representations learns the ELMo mix (s, γ) jointly with a tagger:

    h_i   = γ · Σ_j s_j · norm_j(x_{i,j})                 (models.scalar_mix.ScalarMix)
    z_i   = [glove_{i-1}; h_{i-1}; glove_i; h_i; glove_{i+1}; h_{i+1}]   (window ±1, zeros at edges)
    logits = W z_i + b,      loss = cross-entropy + λ · ‖s − mean(s)‖²

Rows, as in the paper: *baseline* (static GloVe 6B 50d input only), *last layer only* (GloVe +
the model's top layer), *all layers λ=1* and *all layers λ=0.001* (GloVe + the learned mix).
Like the paper, the contextual vectors are *added* to the baseline's input. ``norm_j`` standardises
each layer by one mean and one standard deviation measured on the training tokens (a fixed version
of ScalarMix's layer norm, so layers of very different scale can be mixed). The ±1 window gives
even the static baseline a little context; it is the same for every row.

POS is scored by token accuracy, chunking by chunk-level F1 as conlleval defines it (a chunk is
correct when its type and its exact span match; ``seqeval``'s default mode implements conlleval).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from models.base import default_device
from models.scalar_mix import ScalarMix

ROWS = ("baseline", "last", "all λ=1", "all λ=0.001")
ROW_LAMBDA = {"all λ=1": 1.0, "all λ=0.001": 0.001}


def chunk_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """conlleval chunk F1 (percent) over sentences of BIO tags (seqeval's default, conlleval mode)."""
    from seqeval.metrics import f1_score

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
            parts.append(self.mix(ctx))                       # (B, W, d)
        z = torch.cat(parts, dim=-1)                          # (B, W, ds + d)
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


def standardise_layers(train_layers: list[np.ndarray], test_layers: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
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

    def __init__(self, lam: float = 0.0, epochs: int = 10, batch_size: int = 2048, lr: float = 1e-2,
                 seed: int = 0, device: str | torch.device | None = None, patience: int = 2) -> None:
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
        win = torch.as_tensor(data.window[rows])               # (B, W), -1 = outside sentence
        valid = (win >= 0).unsqueeze(-1)
        safe = win.clamp(min=0)
        ctx = static = None
        if data.ctx is not None:
            ctx = data.ctx[:, safe].float() * valid.float()    # (L, B, W, d)
            ctx = ctx.to(self.device)
        if data.static is not None:
            static = (data.static[safe] * valid.float()).to(self.device)   # (B, W, ds)
        return ctx, static

    def fit(self, data: TokenData) -> "MixProbe":
        if len(data.labels) == 0:
            raise ValueError("Cannot fit on zero tokens.")
        torch.manual_seed(self.seed)
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
        best, best_state, bad = -1.0, None, 0
        self.history_ = []
        for epoch in range(self.epochs):
            self.model_.train()
            order = tr_rows[torch.randperm(len(tr_rows), generator=gen).numpy()]
            for start in range(0, len(order), self.batch_size):
                rows = order[start:start + self.batch_size]
                ctx, static = self._batch(data, rows)
                loss = nn.functional.cross_entropy(self.model_(ctx, static), y[rows].to(self.device))
                loss = loss + self.lam * self.model_.penalty()
                opt.zero_grad()
                loss.backward()
                opt.step()
            entry = {"epoch": epoch + 1, "loss": float(loss.detach())}
            if len(val_rows):
                acc = float((self._predict_idx(data, val_rows) == y[val_rows].numpy()).mean())
                entry["val_acc"] = acc
                if acc > best + 1e-5:
                    best, best_state, bad = acc, copy.deepcopy(self.model_.state_dict()), 0
                else:
                    bad += 1
            self.history_.append(entry)
            if len(val_rows) and bad >= self.patience:
                break
        if best_state is not None:
            self.model_.load_state_dict(best_state)
        return self

    @torch.inference_mode()
    def _predict_idx(self, data: TokenData, rows: np.ndarray) -> np.ndarray:
        self.model_.eval()
        out = []
        for start in range(0, len(rows), 4096):
            ctx, static = self._batch(data, rows[start:start + 4096])
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
        return {"s": [round(float(v), 4) for v in self.model_.mix.weights.detach().cpu()],
                "gamma": round(float(self.model_.mix.gamma.detach().cpu()), 4)}


# ----------------------------------------------------------------------------- end-to-end run

BASELINE_MODEL = "glove-6b-50d"
TASKS = ("pos", "chunk")


def _labels(sents, task: str) -> np.ndarray:
    return np.array([t for s in sents for t in (s.pos if task == "pos" else s.chunks)])


def _score(task: str, gold: np.ndarray, pred: np.ndarray, offsets: np.ndarray) -> tuple[str, float]:
    if task == "pos":
        return "accuracy", 100.0 * float((gold == pred).mean())
    split = lambda a: [list(a[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]  # noqa: E731
    return "chunk_F1", chunk_f1(split(gold), split(pred))


def run_mix(embedder, rows: Sequence[str] = ROWS, tasks: Sequence[str] = TASKS, limit: int | None = None,
            device: str | None = None, seed: int = 0, epochs: int = 10, progress=None,
            show_progress: bool = True, feature_root: Path | None = None, train_limit: int | None = None) -> dict:
    """The λ ablation for one contextual model (the "baseline" row uses GloVe alone).

    ``train_limit`` trains on the first N training sentences only, slicing the cached features of
    the full split (no new extraction); the test split stays complete.
    Returns a result dict; ``extra["mix"][task][row]`` holds the learned s and γ.
    """
    import time

    from models.registry import load_embedder
    from probes.errors import ProbeInputError
    from probes.features import get_features
    from probes.pos import conll_slice

    bad = [r for r in rows if r not in ROWS]
    if bad:
        raise ProbeInputError(f"Unknown row(s) {bad}; choose from {', '.join(ROWS)}.")
    bad = [t for t in tasks if t not in TASKS]
    if bad:
        raise ProbeInputError(f"Unknown task(s) {bad}; choose from {', '.join(TASKS)}.")
    needs_ctx = [r for r in rows if r != "baseline"]
    if needs_ctx and embedder.num_layers < 2:
        raise ProbeInputError(f"{embedder.name} has a single layer: the λ ablation needs a contextual model "
                              f"(rows {needs_ctx}).")
    t0 = time.perf_counter()
    train, test = conll_slice("train", limit), conll_slice("test", limit)
    suffix = "" if limit is None else f"-limit{limit}"
    w_tr, w_te = [list(s.words) for s in train], [list(s.words) for s in test]
    glove = load_embedder(BASELINE_MODEL)
    g_tr = get_features(glove, f"conll2000-train{suffix}", w_tr, show_progress=show_progress, root=feature_root)
    g_te = get_features(glove, f"conll2000-test{suffix}", w_te, show_progress=show_progress, root=feature_root)
    if train_limit is not None and train_limit <= 0:
        raise ProbeInputError(f"--train-limit {train_limit} selects no sentences.")
    n_tr = len(train) if train_limit is None else min(train_limit, len(train))
    train, tr_offsets = train[:n_tr], g_tr.offsets[:n_tr + 1]
    n_rows = int(tr_offsets[-1])
    static_tr = torch.from_numpy(np.asarray(g_tr.layer(0)[:n_rows], np.float32))
    static_te = torch.from_numpy(np.asarray(g_te.layer(0), np.float32))
    ctx = {}
    if needs_ctx:
        f_tr = get_features(embedder, f"conll2000-train{suffix}", w_tr, show_progress=show_progress, root=feature_root)
        f_te = get_features(embedder, f"conll2000-test{suffix}", w_te, show_progress=show_progress, root=feature_root)
        L = embedder.num_layers
        all_tr, all_te = standardise_layers([f_tr.layer(j)[:n_rows] for j in range(L)],
                                            [f_te.layer(j) for j in range(L)])
        ctx = {"all": (all_tr, all_te), "last": (all_tr[-1:], all_te[-1:])}
    t_feat = time.perf_counter() - t0
    out_rows, mixes, k = [], {}, 0
    for task in tasks:
        y_tr, y_te = _labels(train, task), _labels(test, task)
        for row in rows:
            if row == "baseline":
                c_tr = c_te = None
            else:
                c_tr, c_te = ctx["last" if row == "last" else "all"]
            d_tr = TokenData(c_tr, static_tr, tr_offsets, y_tr)
            d_te = TokenData(c_te, static_te, g_te.offsets, y_te)
            probe = MixProbe(lam=ROW_LAMBDA.get(row, 0.0), epochs=epochs, seed=seed, device=device).fit(d_tr)
            metric, value = _score(task, y_te, probe.predict(d_te), g_te.offsets)
            out_rows.append({"dataset": f"conll2000-test:{task}", "layer": row, "metric": metric,
                             "value": round(value, 2), "n": len(y_te)})
            mixes.setdefault(task, {})[row] = probe.mix_weights()
            k += 1
            if progress is not None:
                progress(k / (len(tasks) * len(rows)), f"{task} / {row}: {value:.1f}")
    return {"model": embedder.name if needs_ctx else BASELINE_MODEL, "probe": "mix",
            "fingerprint": embedder.fingerprint(),
            "params": {"rows": list(rows), "tasks": list(tasks), "limit": limit, "train_limit": train_limit,
                       "seed": seed, "epochs": epochs},
            "rows": out_rows,
            "extra": {"mix": mixes, "feature_s": round(t_feat, 1), "total_s": round(time.perf_counter() - t0, 1),
                      "train_tokens": n_rows, "test_tokens": int(g_te.num_words)}}
