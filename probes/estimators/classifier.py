"""Classifier probes on frozen vectors, and the one training loop they share.

``train_with_early_stopping`` is the minibatch Adam loop of every probe that trains (the linear POS
probe and the other token-probe families — MLP, rank-limited —, the λ-ablation tagger, the structural probes):
each epoch a seeded shuffle of the training rows, one optimiser step per batch, then a look at held-out rows.
It has two schedules (``SCHEDULES``), each keeping the best held-out state:

- ``"early-stop"``: stop after ``patience`` epochs without a higher held-out *accuracy* (at most ``epochs``);
  the λ-ablation tagger, the structural probes and MDL's block probes train this way.
- ``"plateau"``: halve the learning rate when the held-out *log-loss* has not fallen for more than ``patience``
  epochs (torch's ``ReduceLROnPlateau``) and stop once it is below ``MIN_LR_FRACTION`` of its start; the kept state
  has the lowest held-out loss. The token probes' default since 2026-12-07: the early stop had left the linear POS
  probe short of its optimum (stopped after 4–10 epochs, 1.5 points under a converged fit on elmo-small's layer 0,
  docs/results/README.md); Voita & Titov's MDL probes halve their learning rate on a dev-loss plateau too.

The model and the way a batch becomes a loss are the caller's; the schedule is here, once.

The plain linear probe's fit is then finished with full-batch L-BFGS where that is cheap and lowers the held-out loss
(``probes.estimators.polish``).

``LinearProbe`` is a multinomial logistic regression in torch (scikit-learn's LogisticRegression
is too slow on ~212k × 1024 inputs on two cores):

    probe = LinearProbe(seed=0).fit(X_train, tags_train)
    probe.score(X_test, tags_test)      # accuracy in [0, 1]
    probe.predict_log_proba(X_test)     # (n, K) natural-log probabilities (MDL codelengths)

Other probe families (``probes.estimators.families``: MLP, rank-limited) override ``_build`` only, so every
family shares the standardisation, the held-out split, the seeding and this loop. ``classes`` fixes
the label set up front (the MDL probe trains on blocks that may miss a label but must code all K).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from models.base import default_device, seeded
from probes.estimators import EARLY_STOP, PLATEAU
from probes.estimators.polish import POLISH_MAX_ROWS, polish_with_lbfgs
from probes.progress import ProgressFn

RowIndex = np.ndarray | torch.Tensor
MAX_BATCH, MIN_BATCH = 2048, 32  # tokens per Adam step
SCHEDULES = (PLATEAU, EARLY_STOP)
# Per schedule: (most epochs, patience). Plateau's bound is a guard, not the stopping rule: on all of CoNLL-2000 the
# decay ended every committed fit after 35–62 epochs (2026-12-07), where a first bound of 60 had cut glove-lm's; its
# patience is torch's: halve after the second epoch with no new low.
SCHEDULE_DEFAULTS = {PLATEAU: (200, 1), EARLY_STOP: (10, 2)}
MIN_LR_FRACTION = 1 / 256  # plateau: stop once the rate is below this share of its start (the ninth halving)


def check_schedule(schedule: str) -> None:
    """ValueError unless ``schedule`` is one of ``SCHEDULES`` (the command line's ``ProbeFamily`` says it as an
    option's error)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r}: choose from {', '.join(SCHEDULES)}.")


def auto_batch(rows: int) -> int:
    """Tokens per Adam step for ``rows`` training rows: 2,048, or fewer so that an epoch takes at least 16 steps.
    Full CoNLL-2000 or EWT (≥ 32,768 rows) keeps 2,048; a few hundred words of a user's file would otherwise get
    one step an epoch, ten in all, and score under the majority label."""
    return int(min(MAX_BATCH, max(MIN_BATCH, rows // 16)))


def train_with_early_stopping(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_rows: RowIndex,
    batch_loss: Callable[[RowIndex], torch.Tensor],
    val_accuracy: Callable[[], float] | None,
    *,
    epochs: int,
    batch_size: int,
    patience: int,
    generator: torch.Generator,
    progress: ProgressFn | None = None,
    val_loss: Callable[[], float] | None = None,
    schedule: str = EARLY_STOP,
) -> list[dict]:
    """Train ``model`` in place and leave it at its best state (held-out; plateau without held-out rows: lowest
    training loss); returns the per-epoch history.

    train_rows:   (num_train,) row indices (numpy or torch) handed to ``batch_loss`` in shuffled batches.
    batch_loss:   rows -> scalar loss of that batch (forward pass included).
    val_accuracy: () -> held-out accuracy, or None (no held-out rows).
    val_loss:     () -> held-out mean loss; the plateau schedule watches it (None: the epoch's training loss).
    schedule:     ``EARLY_STOP`` (stop on held-out accuracy; without it, train all ``epochs``) or ``PLATEAU``
                  (module docstring).
    generator:    seeds the shuffles (the same seed gives the same run).
    progress:     told after each epoch: "epoch 3/10, patience 1/2, dev 91.2% (best 91.4%)" (nothing else
                  changes: the callback sees the history, it never steers the loop).

    History entries: {"epoch", "train_loss" (mean over the epoch's rows)[, "val_acc"][, "val_loss", "lr"]}; the
    kept epoch's entry has "kept": True, and the last one "stopped" (why) unless ``epochs`` ran out first.
    """
    check_schedule(schedule)
    plateau = schedule == PLATEAU
    decay = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=patience) if plateau else None
    lr0 = optimizer.param_groups[0]["lr"]
    min_lr = lr0 * MIN_LR_FRACTION
    margin = 0.0 if plateau else 1e-5  # an accuracy must beat the best by more than float noise; any lower loss counts
    best, best_state, best_entry, bad = -float("inf"), None, None, 0
    history: list[dict] = []
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(train_rows), generator=generator)
        order = (
            train_rows[perm.to(train_rows.device)] if isinstance(train_rows, torch.Tensor) else train_rows[perm.numpy()]
        )
        total = 0.0
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            loss = batch_loss(rows)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(rows)
        entry = {"epoch": epoch + 1, "train_loss": total / max(len(order), 1)}
        if val_accuracy is not None:
            entry["val_acc"] = val_accuracy()
        if plateau:
            entry["lr"] = optimizer.param_groups[0]["lr"]
            watched = entry["train_loss"] if val_loss is None else val_loss()
            if val_loss is not None:
                entry["val_loss"] = watched
            score = -watched
        else:
            score = entry.get("val_acc")
        if score is not None:
            if score > best + margin:
                best, best_state, best_entry, bad = score, copy.deepcopy(model.state_dict()), entry, 0
            else:
                bad += 1
        history.append(entry)
        if progress is not None:
            done = (epoch + 1) / epochs
            if plateau:  # the decay, not the bound, ends it: the halvings so far of the ~9 it takes
                done = max(done, min(1.0, math.log2(lr0 / entry["lr"]) / math.log2(1 / MIN_LR_FRACTION)))
            progress(done, f"epoch {epoch + 1}/{epochs}{_epoch_text(entry, bad, patience, best)}")
        if plateau:
            decay.step(-score)
            if optimizer.param_groups[0]["lr"] < min_lr:
                entry["stopped"] = "learning rate decayed"
                break
        elif score is not None and bad >= patience:
            entry["stopped"] = "patience"
            break
    if best_state is not None:
        model.load_state_dict(best_state)
        best_entry["kept"] = True
    return history


def reached_bound(history: list[dict]) -> bool:
    """Did a plateau schedule run out of epochs before its learning rate decayed (a fit that may be short)? Read on
    its last epoch (a polish's rounds come after it)."""
    epochs = [entry for entry in history if "epoch" in entry]
    return bool(epochs) and "lr" in epochs[-1] and "stopped" not in epochs[-1]


def _epoch_text(entry: dict, bad: int, patience: int, best: float) -> str:
    """The progress line's tail after "epoch 3/10": what the schedule watches and its best so far."""
    if "lr" in entry:
        watched = "dev loss" if "val_loss" in entry else "train loss"
        value = entry.get("val_loss", entry["train_loss"])
        return f", lr {entry['lr']:.2g}, {watched} {value:.4f} (best {-best:.4f})"
    if "val_acc" not in entry:
        return ""
    return f", patience {bad}/{patience}, dev {100 * entry['val_acc']:.1f}% (best {100 * best:.1f}%)"


class LinearProbe:
    """Softmax classifier y = argmax(W·standardise(x) + b), scikit-learn style.

    Args:
        schedule: ``PLATEAU`` (default) or ``EARLY_STOP`` (``train_with_early_stopping``).
        polish: finish a small plateau fit with L-BFGS where the held-out loss agrees (``probes.estimators.polish``;
            the plain linear model only).
        epochs: maximum passes over the training data (None: the schedule's, ``SCHEDULE_DEFAULTS``).
        batch_size: tokens per Adam step (None: ``auto_batch`` of the training rows).
        lr, weight_decay: Adam settings (weight decay = L2 on every parameter, the bias too).
        val_fraction: share of training rows held out for the schedule (0 disables it).
        patience: early stop: epochs without a better held-out accuracy before stopping; plateau: the learning rate
            is halved after ``patience`` + 1 epochs without a lower held-out loss (None: the schedule's).
        seed: seeds the held-out split, the initialisation and the shuffles (deterministic).
        device: torch device (default: CUDA when present).
        classes: the label set (default: the labels seen by ``fit``).
    """

    def __init__(
        self,
        epochs: int | None = None,
        batch_size: int | None = None,
        lr: float = 2e-2,
        weight_decay: float = 1e-6,
        val_fraction: float = 0.1,
        patience: int | None = None,
        seed: int = 0,
        device: str | torch.device | None = None,
        classes: Sequence | None = None,
        schedule: str = PLATEAU,
        polish: bool = True,
    ) -> None:
        check_schedule(schedule)
        self.schedule, self.polish = schedule, polish
        default_epochs, default_patience = SCHEDULE_DEFAULTS[schedule]
        self.epochs = default_epochs if epochs is None else epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.val_fraction = val_fraction
        self.patience = default_patience if patience is None else patience
        self.seed = seed
        self.device = torch.device(device) if device is not None else default_device()
        self.classes = None if classes is None else np.unique(np.asarray(classes))
        self.classes_: np.ndarray | None = None
        self.model_: nn.Module | None = None
        self.mean_: torch.Tensor | None = None
        self.std_: torch.Tensor | None = None
        self.history_: list[dict] = []

    def _build(self, dim: int, num_classes: int) -> nn.Module:
        """The network from standardised inputs to logits (the family's one difference)."""
        return nn.Linear(dim, num_classes)

    def _encode(self, y: np.ndarray) -> np.ndarray:
        """Label indices into ``classes_`` (set here: the fixed ``classes`` or the labels seen)."""
        if self.classes is None:
            self.classes_, y_idx = np.unique(y, return_inverse=True)
            return y_idx
        self.classes_ = self.classes
        y_idx = np.searchsorted(self.classes_, y).clip(0, len(self.classes_) - 1)
        unknown = self.classes_[y_idx] != y
        if unknown.any():
            raise ValueError(f"Label {y[unknown][0]!r} is not among the {len(self.classes_)} given classes.")
        return y_idx

    def _tensor(self, X: np.ndarray) -> torch.Tensor:
        X = torch.as_tensor(np.asarray(X, dtype=np.float32), device=self.device)
        return (X - self.mean_) / self.std_

    def fit(self, X: np.ndarray, y: Sequence, progress: ProgressFn | None = None) -> LinearProbe:
        """X: (num_tokens, dim); y: (num_tokens,) labels of any hashable type; ``progress``: told after
        each epoch (``train_with_early_stopping``)."""
        y = np.asarray(y)
        if len(X) == 0:
            raise ValueError("Cannot fit a probe on zero tokens.")
        if len(X) != len(y):
            raise ValueError(f"{len(X)} vectors for {len(y)} labels.")
        y_idx = self._encode(y)
        with seeded(self.seed):  # the model's initial weights and its dropout draw from torch's generator
            return self._fit(X, y_idx, progress)

    def _fit(self, X: np.ndarray, y_idx: np.ndarray, progress: ProgressFn | None) -> LinearProbe:
        gen = torch.Generator().manual_seed(self.seed)
        X_np = np.asarray(X, dtype=np.float32)
        self.mean_ = torch.as_tensor(X_np.mean(0), device=self.device)
        self.std_ = torch.as_tensor(X_np.std(0) + 1e-6, device=self.device)
        Xt = self._tensor(X_np)
        yt = torch.as_tensor(y_idx, device=self.device)
        perm = torch.randperm(len(Xt), generator=gen).to(self.device)
        n_val = int(len(Xt) * self.val_fraction) if len(Xt) >= 50 else 0
        val_idx, tr_idx = perm[:n_val], perm[n_val:]
        self.model_ = self._build(Xt.shape[1], len(self.classes_)).to(self.device)
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr, weight_decay=self.weight_decay)

        def batch_loss(rows: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(self.model_(Xt[rows]), yt[rows])

        @torch.inference_mode()
        def val_accuracy() -> float:
            self.model_.eval()  # no dropout when measuring (the loop sets train() each epoch)
            return float((self.model_(Xt[val_idx]).argmax(1) == yt[val_idx]).float().mean())

        @torch.inference_mode()
        def val_loss() -> float:
            self.model_.eval()
            return float(nn.functional.cross_entropy(self.model_(Xt[val_idx]), yt[val_idx]))

        self.history_ = train_with_early_stopping(
            self.model_,
            opt,
            tr_idx,
            batch_loss,
            val_accuracy if n_val else None,
            epochs=self.epochs,
            batch_size=self.batch_size or auto_batch(len(tr_idx)),
            patience=self.patience,
            generator=gen,
            progress=progress,
            val_loss=val_loss if n_val else None,
            schedule=self.schedule,
        )
        # the plain linear probe's problem is convex: finish it with L-BFGS where that is cheap (``polish``)
        plain = type(self)._build is LinearProbe._build
        if self.polish and plain and self.schedule == PLATEAU and n_val and len(tr_idx) <= POLISH_MAX_ROWS:
            X_fit, y_fit = Xt[tr_idx], yt[tr_idx]  # once, not at every L-BFGS evaluation

            def train_loss() -> torch.Tensor:
                return nn.functional.cross_entropy(self.model_(X_fit), y_fit)

            polish_with_lbfgs(
                self.model_,
                train_loss,
                val_loss,
                val_accuracy,
                self.history_,
                weight_decay=self.weight_decay,
                progress=progress,
            )
        return self

    @torch.inference_mode()
    def _logits(self, X: np.ndarray, fn: Callable[[torch.Tensor], torch.Tensor]) -> list[np.ndarray]:
        """``fn`` of the logits of ``X``, in chunks of 65,536 rows."""
        if self.model_ is None:
            raise RuntimeError("Call fit() before predict().")
        self.model_.eval()
        return [
            fn(self.model_(self._tensor(X[start : start + 65536]))).cpu().numpy() for start in range(0, len(X), 65536)
        ]

    def predict(self, X: np.ndarray) -> np.ndarray:
        out = self._logits(X, lambda z: z.argmax(1))
        idx = np.concatenate(out) if out else np.zeros(0, np.int64)
        return self.classes_[idx]

    def predict_log_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, len(classes_)) natural-log class probabilities."""
        out = self._logits(X, lambda z: torch.log_softmax(z.float(), dim=1))
        return np.concatenate(out) if out else np.zeros((0, len(self.classes_)), np.float32)

    def score(self, X: np.ndarray, y: Sequence) -> float:
        """Accuracy in [0, 1]."""
        y = np.asarray(y)
        if len(y) == 0:
            raise ValueError("Cannot score on zero tokens.")
        return float((self.predict(X) == y).mean())
