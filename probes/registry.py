"""The probe registry: probe name -> its ``ProbeSpec`` (runner, baselines, tables, options, chart).

The command line (one subcommand per probe), ``reproduce``, the app's Probes page and ``bench/``
look probes up here; nothing else names them. Entries are import paths, so listing the probes
imports nothing heavy; ``get_probe`` imports a probe's module on first use.

Adding a probe is one module that defines a ``ProbeSpec`` plus one line in ``PROBES``
(docs/architecture.md walks through it):

    PROBES["toy"] = "probes.toy:PROBE"
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from probes.errors import ProbeInputError, check_positive, check_seeds
from probes.inputs import InputFile, Preview
from probes.layers import LayerSpec
from probes.progress import ProgressFn, scaled
from probes.results import ProbeResult
from probes.stats.units import SMALL_N

#: What a run embeds, known before it runs (``ProbeSpec.embeds``, ``probes.estimate``): per dataset its
#: feature-cache key (None: embedded without the cache) and its sentences; the training split first.
Embeds = list[tuple[str | None, list[list[str]]]]


@dataclass(frozen=True)
class Option:
    """A probe-specific option: a CLI flag (``--semcor-limit``) and a keyword of the runner (``semcor_limit``).

    parse: turns the CLI string or the app's value into what the runner takes (default: ``type``).
    positive: a number that must be > 0 when given (a limit, a count of epochs).
    choices:  the values it takes (checked; the app's upload form offers them in a selectbox).
    in_app:   whether the app's upload form shows it (False: command line only, e.g. key files).
    own_flag: ``reproduce`` and ``sweep``, which parse every probe's options, give it as ``--<probe>-<name>``
              (structural's ``--structural-rank``): another probe's option of that name means something else.
    """

    name: str
    type: Callable[[str], Any] = str
    default: Any = None
    help: str = ""
    parse: Callable[[Any], Any] | None = None
    positive: bool = False
    choices: tuple | None = None
    in_app: bool = True
    own_flag: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def add_to(self, parser: argparse.ArgumentParser, help: str | None = None) -> None:
        """Its command-line flag (``type=bool``: a switch, ``--control``)."""
        help = (help or self.help).replace("%", "%%")  # argparse formats help text with %
        if self.type is bool:
            parser.add_argument(self.flag, dest=self.name, action="store_true", help=help or self.help)
        else:
            parser.add_argument(self.flag, dest=self.name, type=self.type, default=self.default, help=help or self.help)

    def value(self, raw: Any) -> Any:
        """The runner's value of ``raw``; ProbeInputError (checked before any extraction) when it is unusable."""
        if raw is None:
            return raw
        if isinstance(raw, str) and self.type not in (str, bool):  # a CLI string given through run_probe(options=…)
            try:
                raw = self.type(raw)
            except ValueError:
                kind = {int: "a whole number", float: "a number"}.get(self.type, self.type.__name__)
                raise ProbeInputError(f"{self.flag} {raw!r}: give {kind}.") from None
        if self.positive:
            check_positive(raw, self.flag)
        if self.choices is not None and raw not in self.choices:
            raise ProbeInputError(f"{self.flag} {raw!r}: choose from {', '.join(map(str, self.choices))}.")
        return raw if self.parse is None else self.parse(raw)


@dataclass(frozen=True)
class RunContext:
    """What every run shares, whatever the probe: the slice, the device, the seed and where to report.

    limit:        first N sentences of each dataset (None: all).
    feature_root: feature-cache root (None: the project cache).
    seeds:        how many seeds a probe that trains runs (``probes.stats.seeds``: seed, seed+1, …; mean ± std).
    """

    limit: int | None = None
    device: str | None = None
    seed: int = 0
    progress: ProgressFn | None = None
    show_progress: bool = True
    feature_root: Path | None = None
    seeds: int = 1

    def __post_init__(self) -> None:
        check_positive(self.limit, "--limit")
        check_positive(self.seeds, "--seeds")
        check_seeds(self.seed, self.seeds or 1)

    def sub_progress(self, lo: float, hi: float, prefix: str = "") -> ProgressFn | None:
        """``progress`` for one part of the run, mapping its 0..1 onto ``lo``..``hi`` of the whole
        (``probes.progress.scaled``)."""
        return scaled(self.progress, lo, hi, prefix)


class Runner(Protocol):
    def __call__(self, embedder, layers: list[LayerSpec] | None, ctx: RunContext, **options) -> ProbeResult: ...


class Baselines(Protocol):
    def __call__(self, ctx: RunContext, **options) -> list[ProbeResult]: ...


@dataclass(frozen=True)
class ChartSpec:
    """How the app draws a probe's results.

    metrics:      metrics worth a chart, in order (the first present is the default).
    datasets:     evaluation splits in display order (others found in results follow).
    layer_order:  non-numeric layer labels in display order (e.g. the λ ablation's rows).
    breakdown:    dataset prefix of per-category rows shown as grouped bars ("ALL-noSE07:" -> WSD per POS),
                  and what the categories are ("part of speech").
    breakdown_ranked_on: the dataset that picks the layer each model's breakdown is shown at (its best there): a dev
                  set, so that the test set does not choose the layer it then judges; None, or a model without
                  rows on it: the dataset shown, and ``viz.results.breakdown_frame`` says so per model.
    breakdown_retired: prefixes of breakdown rows that earlier versions wrote (WSD's per-POS rows on ALL): still
                  in old result files, so left out of the dataset pickers like ``breakdown``'s, and drawn nowhere.
    y_range:      a fixed y axis for every metric (cosines: (-1, 1)); None: the metric's own axis
                  (``viz.axes.METRIC_AXES``, percentages by default).
    axis_titles:  (metric, y-axis title) pairs saying what a fixed-axis metric's number is ("cosine −
                  anisotropy"), where its name ("self_similarity_adj") does not; ``axis_title``.
    small_n:      the rows' ``n`` under which a chart calls its sample small (``probes.stats.units.SMALL_N`` test
                  instances), and ``small_what`` what ``n`` counts: a mean over 993 words is no small sample the
                  way 993 test instances of an accuracy are.
    """

    metrics: tuple[str, ...]
    datasets: tuple[str, ...] = ()
    layer_order: tuple[str, ...] = ()
    breakdown: str | None = None
    breakdown_label: str = "category"
    breakdown_ranked_on: str | None = None
    breakdown_retired: tuple[str, ...] = ()
    y_range: tuple[float, float] | None = None
    axis_titles: tuple[tuple[str, str], ...] = ()
    small_n: int = SMALL_N
    small_what: str = "test instances"

    def axis_title(self, metric: str) -> str | None:
        """The y-axis title for ``metric`` (None: the chart's own, from the metric's name and unit)."""
        return dict(self.axis_titles).get(metric)


@dataclass(frozen=True)
class ProbeSpec:
    """Everything the lab knows about one probe.

    run:             (embedder, layers, ctx, **options) -> ProbeResult.
    baselines:       (ctx, **options) -> no-embedding (or fixed-model) baseline results on the same data.
    tables:          (results table, extras) -> {table key: DataFrame}, the paper-style tables.
    table_titles:    table key -> title, in the order tables.md shows them.
    baseline_models: model name of each baseline result -> its label (drawn as its own series).
    min_layers:      fewest layers a model needs (the λ ablation mixes at least two).
    needs_attention: the probe reads attention (head syntax): a model without it is refused before any work.
    check_pair:      ``(embedder, options) -> None``, a ProbeInputError when this model cannot be probed with these
                     options (CKA of a one-layer model with nothing to compare it with).
    uses_layers:     whether ``--layers`` applies (the λ ablation chooses its layers itself).
    needs_files:     the probe has no built-in data and runs only on the user's files (tag, span): it is
                     left out of ``reproduce``'s default probes and the app's built-in quick run.
    summary:         result -> extra lines the command line prints (e.g. learned mix weights).
    inputs:          the user's files it reads (``probes.inputs.InputFile``): the app's upload tab offers
                     the probes that have some, one uploader per file.
    preview:         (limit, runner options incl. the file paths) -> what the files hold (``Preview``).
    in_default_reproduce: whether ``reproduce`` and ``sweep`` run it when ``--probes`` is not given
                     (contextuality and CKA are analyses of the representations, run on request).
    report:          (runs folder, out folder) -> the Markdown file written: a probe with a report of its
                     own (contextuality) has ``reproduce`` save its results under ``OUT/<name>/runs`` and
                     write its tables with this into ``OUT/<name>/``, not into ``OUT/tables.md``.
    embeds:          (limit, runner options) -> what a run will embed (``Embeds``; None: not known before
                     the run): the estimate printed before a run (``probes.estimate``).
    trains:          the probe fits a model whose result depends on its seed (a classifier, the structural
                     probe), so ``reproduce`` runs ``CLAIM_SEEDS`` seeds of it by default; False: an analysis
                     whose seed only draws Monte-Carlo samples and carries that error in its intervals
                     (contextuality, CKA, head syntax), run once unless ``--seeds`` says otherwise.
    quick:           options the app's quick run sets besides ``--limit`` (option name -> its default there),
                     each a number input labelled by the option's help: WSD's SemCor slice, since the test
                     slice's limit applied to SemCor leaves nearly every test word to the first-sense backoff.
    check_options:   the options that only make sense together (``--rank`` with ``--probe rank``), checked
                     once each is: ProbeInputError, never an option silently ignored.
    """

    name: str
    title: str
    description: str
    run: Runner
    baselines: Baselines
    tables: Callable[[pd.DataFrame, list[dict]], dict[str, pd.DataFrame]]
    table_titles: dict[str, str]
    chart: ChartSpec
    options: tuple[Option, ...] = ()
    baseline_models: dict[str, str] = field(default_factory=dict)
    min_layers: int = 1
    needs_attention: bool = False
    check_pair: Callable[[Any, dict], None] | None = None
    uses_layers: bool = True
    needs_files: bool = False
    summary: Callable[[ProbeResult], list[str]] | None = None
    inputs: tuple[InputFile, ...] = ()
    preview: Callable[[int, dict], Preview] | None = None
    in_default_reproduce: bool = True
    report: Callable[[Path, Path], Path] | None = None
    embeds: Callable[[int | None, dict], Embeds | None] | None = None
    trains: bool = True
    quick: dict[str, int] = field(default_factory=dict)
    check_options: Callable[[dict[str, Any]], None] | None = None

    @property
    def short_title(self) -> str:
        """The title's name ("POS — linear probe (CoNLL-2000)" -> "POS"): tab labels, chart titles, messages."""
        return self.title.split(" —")[0]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        for opt in self.options:
            opt.add_to(parser)

    def combined_option(self, opt: Option) -> Option:
        """``opt`` as ``reproduce`` and ``sweep`` parse it: renamed ``<probe>_<name>`` when it has its ``own_flag``."""
        return replace(opt, name=f"{self.name}_{opt.name}") if opt.own_flag else opt

    def options_from(self, values: dict[str, Any]) -> dict[str, Any]:
        """Runner keywords from parsed CLI arguments or app inputs (missing ones take their defaults), each checked,
        then together (``check_options``). An option with its ``own_flag`` is read from ``<probe>_<name>`` where
        ``values`` has it (``reproduce``, ``sweep``), else from its name (the probe's own command, the app)."""
        options = {}
        for opt in self.options:
            given = self.combined_option(opt)
            given = given if given.name in values else opt
            options[opt.name] = given.value(values.get(given.name, opt.default))
        if self.check_options is not None:
            self.check_options(options)
        return options

    def check_model(self, embedder, options: dict | None = None) -> None:
        """ProbeInputError when the probe cannot read this model (too few layers; no attention where it needs it;
        ``check_pair`` under ``options``): checked before any extraction, and ``reproduce`` and a sweep skip the
        pair with its message."""
        if embedder.num_layers < self.min_layers:
            raise ProbeInputError(
                f"{embedder.name} has a single layer: the {self.name} probe needs a contextual "
                f"model with at least {self.min_layers} layers."
            )
        if self.needs_attention and not getattr(embedder, "has_attention", False):
            raise ProbeInputError(f"{embedder.name} has no attention: the {self.name} probe needs a transformer.")
        if self.check_pair is not None:
            self.check_pair(embedder, options or {})


def no_baselines(ctx: RunContext, **options) -> list[ProbeResult]:
    """``ProbeSpec.baselines`` of a probe whose reference values are rows of its own result (contextuality's
    anisotropy baselines) or that has none (CKA)."""
    return []


#: Probe name -> "module:attribute" of its ProbeSpec, in the order tables and pages show them.
PROBES: dict[str, str] = {
    "wsd": "probes.tasks.wsd.probe:PROBE",
    "pos": "probes.tasks.pos:PROBE",
    "mix": "probes.tasks.mix:PROBE",
    "tag": "probes.tasks.tag:PROBE",
    "span": "probes.tasks.span:PROBE",
    "contextuality": "probes.tasks.contextuality:PROBE",
    "cka": "probes.tasks.cka:PROBE",
    "structural": "probes.tasks.structural:PROBE",
    "head_syntax": "probes.tasks.head_syntax:PROBE",
}


def builtin_probe_names() -> list[str]:
    """The probes that run on the lab's own data (``reproduce``'s default), in registry order."""
    return [spec.name for spec in all_probes() if not spec.needs_files and spec.in_default_reproduce]


def get_probe(name: str) -> ProbeSpec:
    """The spec of probe ``name``; ProbeInputError naming the registered probes when unknown."""
    try:
        module, attr = PROBES[name].split(":")
    except KeyError:
        raise ProbeInputError(f"Unknown probe {name!r}; choose from {', '.join(PROBES)}.") from None
    return getattr(importlib.import_module(module), attr)


def all_probes() -> list[ProbeSpec]:
    return [get_probe(n) for n in PROBES]


def check_options_heard(values: dict[str, Any], chosen: Sequence[ProbeSpec]) -> None:
    """``reproduce`` and ``sweep`` parse every probe's options; one given (not its default) that none of the
    ``chosen`` probes takes would be ignored while the run reads as if it applied: a ProbeInputError naming the
    probes that take it."""
    taken = {spec.combined_option(opt).name for spec in chosen for opt in spec.options}
    unheard: dict[str, tuple[Option, list[str]]] = {}
    for spec in all_probes():
        for opt in map(spec.combined_option, spec.options):
            if opt.name not in taken and values.get(opt.name, opt.default) not in (opt.default, None):
                unheard.setdefault(opt.name, (opt, []))[1].append(spec.name)
    if unheard:
        said = "; ".join(f"{opt.flag} is an option of {', '.join(names)}" for opt, names in unheard.values())
        raise ProbeInputError(
            f"{said}; --probes {','.join(s.name for s in chosen)} would not use it. Leave it out, or add the probe."
        )
