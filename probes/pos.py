"""POS tagging with a linear (softmax) probe on frozen representations, layer by layer.

Peters et al. (2018, Table 6) train a linear classifier on each biLM layer's frozen vectors and
report PTB tagging accuracy. Here: CoNLL-2000 train (WSJ 15–18) for training, CoNLL-2000 test
(WSJ 20) for accuracy, gold PTB tags. ``LinearProbe`` is a multinomial logistic regression in
torch (minibatch Adam, early stopping on a held-out tenth of the training tokens), because
scikit-learn's LogisticRegression is too slow on ~212k × 1024 inputs on two cores.

    probe = LinearProbe(seed=0).fit(X_train, tags_train)
    probe.score(X_test, tags_test)      # accuracy in [0, 1]
"""
from __future__ import annotations

import copy
from collections import Counter, defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from models.base import default_device


class LinearProbe:
    """Softmax classifier y = argmax(W·standardise(x) + b), scikit-learn style.

    Args:
        epochs: maximum passes over the training data.
        batch_size: tokens per Adam step.
        lr, weight_decay: Adam settings (weight decay = L2 on W).
        val_fraction: share of training rows held out for early stopping (0 disables it).
        patience: epochs without held-out improvement before stopping.
        seed: seeds the held-out split, the initialisation and the shuffles (deterministic).
        device: torch device (default: CUDA when present).
    """

    def __init__(self, epochs: int = 10, batch_size: int = 2048, lr: float = 2e-2, weight_decay: float = 1e-6,
                 val_fraction: float = 0.1, patience: int = 2, seed: int = 0,
                 device: str | torch.device | None = None) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.val_fraction = val_fraction
        self.patience = patience
        self.seed = seed
        self.device = torch.device(device) if device is not None else default_device()
        self.classes_: np.ndarray | None = None
        self.model_: nn.Linear | None = None
        self.mean_: torch.Tensor | None = None
        self.std_: torch.Tensor | None = None
        self.history_: list[dict] = []

    def _tensor(self, X: np.ndarray) -> torch.Tensor:
        X = torch.as_tensor(np.asarray(X, dtype=np.float32), device=self.device)
        return (X - self.mean_) / self.std_

    def fit(self, X: np.ndarray, y: Sequence) -> "LinearProbe":
        """X: (num_tokens, dim); y: (num_tokens,) labels of any hashable type."""
        y = np.asarray(y)
        if len(X) == 0:
            raise ValueError("Cannot fit a probe on zero tokens.")
        if len(X) != len(y):
            raise ValueError(f"{len(X)} vectors for {len(y)} labels.")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        gen = torch.Generator().manual_seed(self.seed)
        torch.manual_seed(self.seed)
        X_np = np.asarray(X, dtype=np.float32)
        self.mean_ = torch.as_tensor(X_np.mean(0), device=self.device)
        self.std_ = torch.as_tensor(X_np.std(0) + 1e-6, device=self.device)
        Xt = self._tensor(X_np)
        yt = torch.as_tensor(y_idx, device=self.device)
        perm = torch.randperm(len(Xt), generator=gen).to(self.device)
        n_val = int(len(Xt) * self.val_fraction) if len(Xt) >= 50 else 0
        val_idx, tr_idx = perm[:n_val], perm[n_val:]
        self.model_ = nn.Linear(Xt.shape[1], len(self.classes_)).to(self.device)
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        best, best_state, bad = -1.0, None, 0
        self.history_ = []
        for epoch in range(self.epochs):
            self.model_.train()
            order = tr_idx[torch.randperm(len(tr_idx), generator=gen).to(self.device)]
            total = 0.0
            for start in range(0, len(order), self.batch_size):
                b = order[start:start + self.batch_size]
                loss = nn.functional.cross_entropy(self.model_(Xt[b]), yt[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(b)
            entry = {"epoch": epoch + 1, "train_loss": total / max(len(order), 1)}
            if n_val:
                with torch.inference_mode():
                    acc = float((self.model_(Xt[val_idx]).argmax(1) == yt[val_idx]).float().mean())
                entry["val_acc"] = acc
                if acc > best + 1e-5:
                    best, best_state, bad = acc, copy.deepcopy(self.model_.state_dict()), 0
                else:
                    bad += 1
            self.history_.append(entry)
            if n_val and bad >= self.patience:
                break
        if best_state is not None:
            self.model_.load_state_dict(best_state)
        return self

    @torch.inference_mode()
    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.model_ is None:
            raise RuntimeError("Call fit() before predict().")
        self.model_.eval()
        out = []
        for start in range(0, len(X), 65536):
            out.append(self.model_(self._tensor(X[start:start + 65536])).argmax(1).cpu().numpy())
        idx = np.concatenate(out) if out else np.zeros(0, np.int64)
        return self.classes_[idx]

    def score(self, X: np.ndarray, y: Sequence) -> float:
        """Accuracy in [0, 1]."""
        y = np.asarray(y)
        if len(y) == 0:
            raise ValueError("Cannot score on zero tokens.")
        return float((self.predict(X) == y).mean())


class MajorityTagBaseline:
    """Each word's most frequent training tag; unseen words get the overall most frequent tag.

    Ties are broken by the tag's overall frequency, then alphabetically (deterministic).
    """

    def fit(self, words: Sequence[str], tags: Sequence[str]) -> "MajorityTagBaseline":
        if len(words) == 0:
            raise ValueError("Cannot fit on zero tokens.")
        overall = Counter(tags)
        per_word: dict[str, Counter] = defaultdict(Counter)
        for w, t in zip(words, tags):
            per_word[w][t] += 1
        rank = {t: (-c, t) for t, c in overall.items()}
        self.default_ = min(overall, key=lambda t: rank[t])
        self.table_ = {w: min(c, key=lambda t: (-c[t], rank[t])) for w, c in per_word.items()}
        return self

    def predict(self, words: Sequence[str]) -> np.ndarray:
        return np.array([self.table_.get(w, self.default_) for w in words])

    def score(self, words: Sequence[str], tags: Sequence[str]) -> float:
        tags = np.asarray(tags)
        if len(tags) == 0:
            raise ValueError("Cannot score on zero tokens.")
        return float((self.predict(words) == tags).mean())


# ----------------------------------------------------------------------------- end-to-end run

def conll_slice(split: str, limit: int | None):
    """CoNLL-2000 sentences of ``split`` (first ``limit``); ProbeInputError when none."""
    from corpora.wsj import load_conll2000
    from probes.errors import ProbeInputError

    if limit is not None and limit <= 0:
        raise ProbeInputError(f"--limit {limit} selects no sentences.")
    sents = load_conll2000(split)
    sents = [s for s in (sents if limit is None else sents[:limit]) if s.words]
    if not sents:
        raise ProbeInputError(f"No CoNLL-2000 {split} sentences in this slice.")
    return sents


def run_pos_baseline(limit: int | None = None) -> dict:
    """Majority tag per word (unknown words: the most frequent tag), CoNLL-2000 train -> test."""
    train, test = conll_slice("train", limit), conll_slice("test", limit)
    base = MajorityTagBaseline().fit([w for s in train for w in s.words], [t for s in train for t in s.pos])
    words, tags = [w for s in test for w in s.words], [t for s in test for t in s.pos]
    acc = base.score(words, tags)
    return {"model": "majority-tag", "probe": "pos", "params": {"limit": limit},
            "rows": [{"dataset": "conll2000-test", "layer": "baseline", "metric": "accuracy",
                      "value": round(100 * acc, 2), "n": len(tags)}]}


def run_pos(embedder, layers: str | None = None, limit: int | None = None, device: str | None = None,
            seed: int = 0, progress=None, show_progress: bool = True, feature_root: Path | None = None) -> dict:
    """Linear POS probe on every requested layer spec (indices, "mean", "mix:w…")."""
    import time

    from probes.features import get_features
    from probes.wsd import parse_layer_specs

    specs = parse_layer_specs(layers, embedder.num_layers)
    t0 = time.perf_counter()
    train, test = conll_slice("train", limit), conll_slice("test", limit)
    suffix = "" if limit is None else f"-limit{limit}"
    needed = sorted({int(s) for s in specs if s.isdigit()} |
                    (set(range(embedder.num_layers)) if any(not s.isdigit() for s in specs) else set()))
    sub = (lambda lo, hi: None) if progress is None else (lambda lo, hi: lambda f, m: progress(lo + (hi - lo) * f, m))
    ftr = get_features(embedder, f"conll2000-train{suffix}", [list(s.words) for s in train], needed,
                       progress=sub(0.0, 0.6), show_progress=show_progress, root=feature_root)
    fte = get_features(embedder, f"conll2000-test{suffix}", [list(s.words) for s in test], needed,
                       progress=sub(0.6, 0.75), show_progress=show_progress, root=feature_root)
    t_feat = time.perf_counter() - t0
    y_tr = np.array([t for s in train for t in s.pos])
    y_te = np.array([t for s in test for t in s.pos])
    rows, history = [], {}
    for k, spec in enumerate(specs):
        if spec.isdigit():
            Xtr, Xte = ftr.layer(int(spec)), fte.layer(int(spec))
        else:
            from probes.wsd import combine_layers

            Xtr = combine_layers({j: np.asarray(ftr.layer(j), np.float32) for j in needed}, spec, embedder.num_layers)
            Xte = combine_layers({j: np.asarray(fte.layer(j), np.float32) for j in needed}, spec, embedder.num_layers)
        probe = LinearProbe(seed=seed, device=device).fit(Xtr, y_tr)
        acc = probe.score(Xte, y_te)
        rows.append({"dataset": "conll2000-test", "layer": spec, "metric": "accuracy",
                     "value": round(100 * acc, 2), "n": len(y_te)})
        history[spec] = probe.history_
        if progress is not None:
            progress(0.75 + 0.25 * (k + 1) / len(specs), f"POS probe layer {spec}: {100 * acc:.1f}%")
    return {"model": embedder.name, "probe": "pos", "fingerprint": embedder.fingerprint(),
            "params": {"layers": specs, "limit": limit, "seed": seed},
            "rows": rows,
            "extra": {"train_tokens": len(y_tr), "test_tokens": len(y_te), "feature_s": round(t_feat, 1),
                      "total_s": round(time.perf_counter() - t0, 1), "history": history}}
