"""The rigor options of the token-labelling probes (``pos``, ``tag``): probe family, control task, MDL.

    python -m probes pos --model minilm --control --mdl
    python -m probes tag --model minilm --train … --test … --probe mlp --hidden 512,256 --dropout 0.2

``RIGOR_OPTIONS`` are the command-line flags (and app options) a token probe adds to its own;
``RigorOptions.from_options`` checks them once, before any extraction. Per layer spec the probe's
loop (``probes.tasks.token_labels.run_layers``) fits ``new_probe`` instead of the plain linear probe and then
calls ``layer_rows`` for the extra rows:

- ``--control``: the control task (``probes.estimators.control``) with the same probe family, averaged over
  ``--control-draws`` label draws (default 5); rows ``control_accuracy`` and ``selectivity`` on every evaluation split;
- ``--mdl``: the online codelength (``probes.estimators.mdl``) of the training labels and of the control
  task's labels; rows ``codelength_kbits``, ``compression``, ``control_codelength_kbits``,
  ``control_compression`` on the *training* split (that is what is coded).

The defaults (linear, the plateau schedule, no control, no MDL) add no rows; ``--schedule early-stop`` gives the
numbers of the runs before 2026-12-07 (under the probe name ``pos+linear-early-stop``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from probes.errors import ProbeInputError
from probes.estimators.classifier import PLATEAU, SCHEDULES, LinearProbe, reached_bound
from probes.estimators.control import DRAWS, ControlTask, control_correct, selectivity_rows
from probes.estimators.families import DEFAULT_WEIGHT_DECAY, KINDS, ProbeFamily, make_probe, parse_hidden
from probes.estimators.mdl import ORDERS, PROBE_SCHEDULE, check_labels, online_codelengths
from probes.progress import ProgressFn, scaled
from probes.registry import Option
from probes.result_names import FAMILY_SEPARATOR, base_probe
from probes.stats.units import Units

log = logging.getLogger(__name__)


def _checked(name: str):
    """``Option.parse``: the value as ``ProbeFamily`` checks it, so a bad one fails before any baseline."""

    def parse(value):
        ProbeFamily(**{name: parse_hidden(value) if name == "hidden" else value})
        return value

    return parse


RIGOR_OPTIONS = (
    Option("probe", str, "linear", f"probe family: {', '.join(KINDS)} (Hewitt & Liang 2019)", choices=KINDS),
    Option("hidden", str, "256", "MLP hidden widths, one or two (e.g. 512,256)", parse=_checked("hidden")),
    Option("rank", int, None, "rank of a rank-limited linear probe (--probe rank)", positive=True),
    Option(
        "dropout",
        float,
        0.0,
        "dropout probability (input; after each hidden layer of an MLP)",
        parse=_checked("dropout"),
    ),
    Option(
        "weight_decay", float, DEFAULT_WEIGHT_DECAY, "Adam L2 weight decay of the probe", parse=_checked("weight_decay")
    ),
    Option(
        "schedule",
        str,
        PLATEAU,
        "training schedule: plateau (halve the learning rate when the held-out loss stalls; the default since "
        "2026-12-07) or early-stop (stop on held-out accuracy, the committed rows before)",
        choices=SCHEDULES,
    ),
    Option(
        "control",
        bool,
        False,
        "also train on the control task (word type -> fixed random label): control accuracy and selectivity per layer",
    ),
    Option(
        "mdl",
        bool,
        False,
        "also the online MDL codelength of the task and its control task per layer (Voita & Titov 2020)",
    ),
    Option(
        "control_draws",
        int,
        DRAWS,
        "control task: label draws averaged (seeds SEED..SEED+K-1); the interval resamples draws and sentences",
        positive=True,
    ),
    Option("mdl_orders", int, ORDERS, "MDL: data orders, each its own online code (mean and interval)", positive=True),
)
RIGOR_NAMES = tuple(o.name for o in RIGOR_OPTIONS)


def check_rigor_options(options: dict) -> None:
    """``ProbeSpec.check_options`` of the token probes: another family's option is refused, not ignored (``--rank``
    without ``--probe rank`` ran the linear probe and saved it under another probe name)."""
    kind = options.get("probe") or "linear"
    if kind != "rank" and options.get("rank") is not None:
        raise ProbeInputError(f"--rank sets the rank of --probe rank; this run's probe is {kind}.")
    hidden = options.get("hidden")
    if kind != "mlp" and hidden and parse_hidden(hidden) != ProbeFamily().hidden:
        raise ProbeInputError(f"--hidden sets the widths of --probe mlp; this run's probe is {kind}.")


def family_probes(df, base: str) -> list[str]:
    """The probe names of ``base`` in the result rows ``df``: ``base`` first, then its other families in order."""
    names = {p for p in df["probe"].unique() if base_probe(p) == base}
    return sorted(names, key=lambda p: (p != base, p))


@dataclass(frozen=True)
class RigorOptions:
    family: ProbeFamily = ProbeFamily()
    control: bool = False
    mdl: bool = False
    mdl_orders: int = ORDERS
    control_draws: int = DRAWS

    @classmethod
    def from_options(cls, options: dict) -> RigorOptions:
        """From runner keywords (missing ones: defaults); ProbeInputError on a bad combination."""
        family = ProbeFamily(
            kind=options.get("probe") or "linear",
            hidden=parse_hidden(options.get("hidden") or "256"),
            rank=options.get("rank"),
            dropout=float(options.get("dropout") or 0.0),
            weight_decay=float(
                DEFAULT_WEIGHT_DECAY if options.get("weight_decay") is None else options["weight_decay"]
            ),
            schedule=options.get("schedule") or PLATEAU,
        )
        orders = int(options.get("mdl_orders") or ORDERS)
        draws = int(options.get("control_draws") or DRAWS)
        return cls(family, bool(options.get("control")), bool(options.get("mdl")), orders, draws)

    @property
    def is_default(self) -> bool:
        return self == RigorOptions()

    def params(self) -> dict:
        """What a result's params record (nothing for the defaults: old results stay comparable)."""
        if self.is_default:
            return {}
        counts = {"mdl_orders": self.mdl_orders} if self.mdl else {}
        counts |= {"control_draws": self.control_draws} if self.control else {}
        return {"probe_family": self.family.label, "control": self.control, "mdl": self.mdl, **counts}

    def check_data(self, labels: Sequence, words: Sequence[str]) -> None:
        """ProbeInputError, before any extraction, when the training data cannot carry the asked-for measures: MDL
        of one label (nothing to transmit), a control task of one label or one word type (solved by rote)."""
        n_labels, n_types = len(set(map(str, labels))), len(set(words))
        if self.mdl:
            check_labels(n_labels)
        if self.control and (n_labels < 2 or n_types < 2):
            raise ProbeInputError(
                f"The control task needs at least two labels and two word types in training; this data has "
                f"{n_labels} label(s) and {n_types} word type(s), so its control accuracy and selectivity would mean "
                "nothing."
            )

    def probe_name(self, base: str) -> str:
        """The results' probe name: ``base`` for the default family, else ``base+FAMILY`` ("pos+mlp-256"),
        so a run with another probe family never replaces the linear probe's rows in the tables."""
        return base if self.family == ProbeFamily() else f"{base}{FAMILY_SEPARATOR}{self.family.slug}"

    def new_probe(self, *, seed: int, device: str | None, **kwargs) -> LinearProbe:
        return make_probe(self.family, seed=seed, device=device, **kwargs)


def row_offsets(offsets: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Sentence boundaries in the flat array of the selected ``rows`` (all words when None)."""
    if rows is None:
        return np.asarray(offsets)
    sent = np.searchsorted(offsets, rows, side="right") - 1
    counts = np.bincount(sent, minlength=len(offsets) - 1)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def layer_rows(
    opts: RigorOptions,
    layer: str,
    Xtr: np.ndarray,
    ytr: np.ndarray,
    words_tr: Sequence[str],
    offsets_tr: np.ndarray | None,
    train_name: str,
    Xte: np.ndarray,
    words_te: Sequence[str],
    task_correct: np.ndarray,
    evals: Sequence[tuple[str, slice, Units]],
    *,
    seed: int,
    device: str | None,
    progress: ProgressFn | None = None,
    show_progress: bool = False,
) -> tuple[list[dict], dict]:
    """Control and MDL rows of one layer spec, and per-layer details for ``extra``.

    evals: (split name, its slice of the concatenated evaluation rows, its resampling units). ``offsets_tr``: sentence
    boundaries of the training rows (MDL blocks are sentences; None: every row its own "sentence").
    """
    rows: list[dict] = []
    details: dict = {}
    new = lambda **kw: opts.new_probe(seed=seed, device=device, **kw)
    block_probe = lambda **kw: new(schedule=PROBE_SCHEDULE, **kw)  # MDL's block probes keep their own schedule
    if opts.control:
        t0 = time.perf_counter()
        told = scaled(progress, 0.0, 0.3 if opts.mdl else 1.0, f"control task layer {layer}: ")
        control_probes: list[LinearProbe] = []  # each draw's fit, to say which ran out of epochs

        def new_control(**kw) -> LinearProbe:
            control_probes.append(new(**kw))
            return control_probes[-1]

        ctrl = control_correct(
            new_control, Xtr, words_tr, ytr, Xte, words_te, seed=seed, progress=told, draws=opts.control_draws
        )
        if bounded := [k + 1 for k, probe in enumerate(control_probes) if reached_bound(probe.history_)]:
            details["control_epoch_bound_reached"] = bounded  # the label draws (1, 2, …) whose fit may be short
            log.warning("control task layer %s: draw(s) %s ran out of epochs before the rate decayed.", layer, bounded)
        for name, part, units in evals:
            rows += selectivity_rows(name, layer, task_correct[part], ctrl[:, part], seed=seed, units=units)
        details["control_s"] = round(time.perf_counter() - t0, 1)
        if progress is not None:
            progress(
                0.3 if opts.mdl else 1.0,
                f"control task layer {layer}: {100 * ctrl.mean():.1f}% (mean of {len(ctrl)} draws)",
            )
    if opts.mdl:
        t0 = time.perf_counter()
        offsets = np.arange(len(ytr) + 1) if offsets_tr is None else offsets_tr
        classes = np.unique(ytr)
        start = 0.3 if opts.control else 0.0
        task = online_codelengths(
            block_probe,
            Xtr,
            ytr,
            offsets,
            classes=classes,
            seed=seed,
            orders=opts.mdl_orders,
            progress=scaled(progress, start, start + (1 - start) / 2),
            show_progress=show_progress,
            desc=f"MDL layer {layer}",
        )
        control_labels = ControlTask(seed).fit(ytr).labels(words_tr)
        ctrl_code = online_codelengths(
            block_probe,
            Xtr,
            control_labels,
            offsets,
            classes=classes,
            seed=seed,
            orders=opts.mdl_orders,
            progress=scaled(progress, start + (1 - start) / 2, 1.0),
            show_progress=show_progress,
            desc=f"MDL control layer {layer}",
        )
        rows += task.rows(train_name, layer) + ctrl_code.rows(train_name, layer, prefix="control_")
        details["mdl"] = {
            "task": task.blocks,
            "control": ctrl_code.blocks,
            "num_classes": task.num_classes,
            "orders": opts.mdl_orders,
        }
        details["mdl_s"] = round(time.perf_counter() - t0, 1)
    return rows, details
