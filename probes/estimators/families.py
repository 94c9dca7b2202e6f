"""Probe families for the token-labelling probes: linear (today's), MLP and rank-limited linear.

Hewitt & Liang (2019) show that how much a probe "finds" depends on the probe as much as on the
representation: an MLP memorises word identity that a linear probe cannot, and a rank-limited
linear map (W = B·A with A: d → r) is a linear probe of limited capacity. All three are
``probes.estimators.classifier.LinearProbe`` with another ``_build`` — the same standardisation, held-out split,
seeding and training loop (``train_with_early_stopping``), so they differ only in the network:

    linear   Dropout(p)? → Linear(d, K)                     (no dropout: exactly today's LinearProbe)
    mlp      [Linear(d, h) → ReLU → Dropout(p)] × 1..2 → Linear(h, K)
    rank     Dropout(p)? → Linear(d, r, bias=False) → Linear(r, K)

Weight decay is Adam's L2 term on every parameter. ``make_probe`` builds one from the options the
command line and the app give (``ProbeFamily``):

    make_probe(ProbeFamily("mlp", hidden=(256,), dropout=0.2), seed=0).fit(X, y).score(Xt, yt)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import nn

from probes.errors import ProbeInputError
from probes.estimators.classifier import PLATEAU, SCHEDULES, LinearProbe
from probes.result_names import family_slug

KINDS = ("linear", "mlp", "rank")
DEFAULT_WEIGHT_DECAY = 1e-6  # LinearProbe's


@dataclass(frozen=True)
class ProbeFamily:
    """Which probe, checked once (``ProbeInputError`` names the bad option).

    kind:    "linear", "mlp" or "rank".
    hidden:  MLP widths, one per hidden layer (1 or 2 layers).
    rank:    the rank r of a rank-limited probe.
    dropout: dropout probability on the input (linear, rank) or after each hidden layer (mlp).
    weight_decay: Adam L2 weight.
    schedule: the training schedule (``probes.estimators.classifier.SCHEDULES``; default: plateau).
    """

    kind: str = "linear"
    hidden: tuple[int, ...] = (256,)
    rank: int | None = None
    dropout: float = 0.0
    weight_decay: float = DEFAULT_WEIGHT_DECAY
    schedule: str = PLATEAU

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ProbeInputError(f"--probe {self.kind!r}: choose from {', '.join(KINDS)}.")
        if self.kind == "mlp" and not (1 <= len(self.hidden) <= 2 and all(h > 0 for h in self.hidden)):
            raise ProbeInputError(
                f"--hidden {','.join(map(str, self.hidden))}: give one or two positive widths, e.g. 256 or 512,256."
            )
        if self.kind == "rank" and (self.rank is None or self.rank <= 0):
            raise ProbeInputError("--probe rank needs --rank R with R a positive number.")
        if not 0.0 <= self.dropout < 1.0:
            raise ProbeInputError(f"--dropout {self.dropout}: give a probability in [0, 1).")
        if not 0.0 <= self.weight_decay < float("inf"):  # inf: the loss turns NaN and training learns nothing
            raise ProbeInputError(f"--weight-decay {self.weight_decay}: give a finite number ≥ 0.")
        if self.schedule not in SCHEDULES:
            raise ProbeInputError(f"--schedule {self.schedule!r}: choose from {', '.join(SCHEDULES)}.")

    @property
    def label(self) -> str:
        """A short name for tables and params ("linear", "mlp-512x256", "rank-16")."""
        base = {"linear": "linear", "mlp": "mlp-" + "x".join(map(str, self.hidden)), "rank": f"rank-{self.rank}"}[
            self.kind
        ]
        extra = (
            [f"dropout {self.dropout:g}"] * (self.dropout > 0)
            + [f"wd {self.weight_decay:g}"] * (self.weight_decay != DEFAULT_WEIGHT_DECAY)
            + [self.schedule] * (self.schedule != PLATEAU)
        )
        return base + (f" ({', '.join(extra)})" if extra else "")

    @property
    def slug(self) -> str:
        """The label without spaces, for a probe name ("mlp-256", "linear-dropout0.2-wd0.1")."""
        return family_slug(self.label)


def parse_hidden(text: str | Sequence[int]) -> tuple[int, ...]:
    """ "512" or "512,256" -> (512,) / (512, 256); ProbeInputError on anything else."""
    if not isinstance(text, str):
        return tuple(int(h) for h in text)
    try:
        return tuple(int(h) for h in text.split(",") if h.strip())
    except ValueError:
        raise ProbeInputError(f"--hidden {text!r}: give one or two widths, e.g. 256 or 512,256.") from None


class MLPProbe(LinearProbe):
    """1–2 hidden ReLU layers (Hewitt & Liang's MLP-1 / MLP-2)."""

    def __init__(self, hidden: Sequence[int] = (256,), dropout: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hidden, self.dropout = tuple(hidden), dropout

    def _build(self, dim: int, num_classes: int) -> nn.Module:
        layers: list[nn.Module] = []
        for width in self.hidden:
            layers += [nn.Linear(dim, width), nn.ReLU(), nn.Dropout(self.dropout)]
            dim = width
        return nn.Sequential(*layers, nn.Linear(dim, num_classes))


class RankProbe(LinearProbe):
    """Linear with rank ≤ r: Linear(d, r, bias=False) then Linear(r, K)."""

    def __init__(self, rank: int = 16, dropout: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rank, self.dropout = rank, dropout

    def _build(self, dim: int, num_classes: int) -> nn.Module:
        return nn.Sequential(
            nn.Dropout(self.dropout), nn.Linear(dim, self.rank, bias=False), nn.Linear(self.rank, num_classes)
        )


class DropoutLinearProbe(LinearProbe):
    """Today's linear probe with dropout on its input."""

    def __init__(self, dropout: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.dropout = dropout

    def _build(self, dim: int, num_classes: int) -> nn.Module:
        return nn.Sequential(nn.Dropout(self.dropout), nn.Linear(dim, num_classes))


def make_probe(family: ProbeFamily = ProbeFamily(), **kwargs) -> LinearProbe:
    """An unfitted probe of ``family``; ``kwargs`` go to ``LinearProbe`` (seed, device, classes, epochs…).

    The default family is exactly ``LinearProbe(**kwargs)`` (same numbers as before this module).
    """
    kwargs = {"weight_decay": family.weight_decay, "schedule": family.schedule, **kwargs}
    if family.kind == "mlp":
        return MLPProbe(hidden=family.hidden, dropout=family.dropout, **kwargs)
    if family.kind == "rank":
        return RankProbe(rank=family.rank, dropout=family.dropout, **kwargs)
    if family.dropout > 0:
        return DropoutLinearProbe(dropout=family.dropout, **kwargs)
    return LinearProbe(**kwargs)
