"""The linear probe's fit finished with full-batch L-BFGS, kept only where it lowers the held-out loss.

``polish_with_lbfgs`` takes the plain linear probe's kept state on to full-batch L-BFGS (torch's ``LBFGS``) on the
same objective, in rounds of ``POLISH_ITERATIONS``, keeping a round only while it lowers the held-out loss (the
plateau schedule's own rule). On small training sets Adam's epochs stop short of the optimum: GloVe 6B 50d on 400 and
1,500 CoNLL-2000 sentences 72.62 → 74.21 % and 72.58 → 75.39 % with the polish, the contextual models' layers +0.02 to
+1.17 where a round was kept, and every 20- and 100-sentence fit left as it was (``bench/bench_polish.py``,
docs/statistics.md). Run to convergence in one go, L-BFGS raised the held-out loss of 19 of 20 contextual fits: the
rounds stop it where the held-out rows stop agreeing. Only fits of at most ``POLISH_MAX_ROWS`` training rows (on all
of CoNLL-2000, 190k training rows, the plateau fits already reach scikit-learn's converged ``LogisticRegression``
within 0.08 points, so the committed full-data rows keep their epochs' fits), with held-out rows, under the plateau
schedule, and only the plain linear model (convex; no dropout).

    polish_with_lbfgs(model, train_loss, val_loss, val_accuracy, history, weight_decay=wd)  # LinearProbe._fit's

The rule is the schedule's own (the lowest held-out loss is kept), so the polish can only move a fit to a state the
held-out rows prefer; its rounds are history entries ``{"polish": k, ...}`` after the epochs.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import nn

from probes.progress import ProgressFn

POLISH_MAX_ROWS = 50_000  # the largest training set the L-BFGS polish runs on (1,500 CoNLL-2000 sentences: 32k)
POLISH_ROUNDS, POLISH_ITERATIONS = 10, 20  # at most 10 rounds of 20 L-BFGS iterations, each checked on held-out rows


def polish_with_lbfgs(
    model: nn.Module,
    train_loss: Callable[[], torch.Tensor],
    val_loss: Callable[[], float],
    val_accuracy: Callable[[], float],
    history: list[dict],
    *,
    weight_decay: float,
    progress: ProgressFn | None = None,
    rounds: int = POLISH_ROUNDS,
    iterations: int = POLISH_ITERATIONS,
) -> None:
    """Full-batch L-BFGS from ``model``'s kept state on ``train_loss`` (() -> the mean cross-entropy over every
    training row) + ``weight_decay`` / 2 · Σ‖p‖² over every parameter, the bias too (the objective whose gradient
    Adam's ``weight_decay`` follows), ``iterations`` at a time; a round is kept while it lowers the held-out loss, and
    the first that does not ends it (its state undone). Appends one ``history`` entry per round ({"polish": k,
    "train_loss" (the cross-entropy, as the epochs log it), "val_loss", "val_acc"}); a kept round takes over the "kept"
    mark from the schedule's epoch. ``progress`` is told each round."""
    params = list(model.parameters())
    best, start = val_loss(), copy.deepcopy(model.state_dict())
    best_state, best_entry = None, None
    lbfgs = torch.optim.LBFGS(params, max_iter=iterations, history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        lbfgs.zero_grad()
        loss = train_loss() + 0.5 * weight_decay * sum((w**2).sum() for w in params)
        loss.backward()
        return loss

    for k in range(rounds):
        model.train()
        lbfgs.step(closure)
        model.eval()
        with torch.no_grad():
            entry = {"polish": k + 1, "train_loss": float(train_loss()), "val_loss": val_loss()}
        entry["val_acc"] = val_accuracy()
        history.append(entry)
        if progress is not None:
            progress(1.0, f"L-BFGS round {k + 1}: dev loss {entry['val_loss']:.4f} (best {best:.4f})")
        if not math.isfinite(entry["val_loss"]) or entry["val_loss"] >= best:
            break
        best, best_state, best_entry = entry["val_loss"], copy.deepcopy(model.state_dict()), entry
    if best_state is None:  # no round helped: the schedule's state stands
        model.load_state_dict(start)
        return
    model.load_state_dict(best_state)
    for entry in history:
        entry.pop("kept", None)
    best_entry["kept"] = True
