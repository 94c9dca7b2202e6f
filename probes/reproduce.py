"""Reproduce the paper's section 5 on several models, and check what a results folder was produced by.

    python -m probes reproduce --models glove-6b-50d,minilm --out docs/results/
    python -m probes reproduce --out docs/results/ --verify

``reproduce`` runs every probe's baselines once, then every (model, probe), each through the one run
path (``probes.run.run_probe``), saves the results under ``OUT/runs`` and writes the tables to ``OUT``
(``probes.reporting.tables``). A model with fewer layers than a probe needs (``ProbeSpec.check_model``)
is skipped with a note. A probe with a report of its own (``ProbeSpec.report``: contextuality) keeps
its results in ``OUT/<probe>/runs`` and its report in ``OUT/<probe>``, never in ``OUT/tables.md``. The
rigor run (``--rigor``) is the token probes with ``--control --mdl``, every contextual model's random
twin (``random:NAME@0``) and contextuality on the trained models. ``--tables-only`` (``write_reports``)
rewrites the tables from saved results: ``--results DIR``, else ``OUT/runs`` when it holds results, else
``<cache>/results``, where a probe command (``python -m probes tag --train F --test F``, ``wsd --train …``)
and the app's uploads save; it says which folder it read, and warns instead of writing an empty table.
``verify`` exits the command with 1 when a result in use was produced by other weights than the model on
disk now (``probes.reporting.verify``).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from models.base import Embedder, UnknownModelError, default_device
from models.listing import OK, describe
from models.random_init import is_random, parse_random, random_name
from models.references import split_references
from models.registry import REGISTRY, load_embedder
from probes.errors import ProbeInputError
from probes.progress import ProgressFn, scaled
from probes.registry import ProbeSpec, all_probes
from probes.reporting.tables import write_tables
from probes.reporting.verify import report, verify_results
from probes.results import ProbeResult, default_results_dir
from probes.run import run_probe
from probes.tasks import contextuality

__all__ = ["random_twins", "reproduce", "results_folder", "split_references", "verify", "write_reports", "zoo_models"]


def zoo_models() -> list[str]:
    """The built-in zoo's models that are usable here (installed or trained), in registry order:
    what ``reproduce`` runs when no ``--models`` is given."""
    return [name for name, spec in REGISTRY.items() if describe(spec).state == OK]


def reproduce(
    embedders: dict[str, Embedder],
    specs: Sequence[ProbeSpec],
    out: Path,
    *,
    options: dict[str, Any],
    rigor: bool = False,
    command: str = "",
    report: Callable[[ProbeResult], None] = lambda res: None,
    say: Callable[[str], None] = print,
    progress: ProgressFn | None = None,
    **run: Any,
) -> dict[str, float]:
    """Run and save everything; returns wall times in seconds of the probes in ``OUT/tables.md`` (per step and
    "total").

    options: every probe's options by name (each probe takes its own). ``report`` sees each result before
    it is saved. ``run``: ``run_probe``'s other keywords (limit, seed, seeds, device). A probe with a report
    of its own (``ProbeSpec.report``) goes to ``OUT/<probe>/runs`` and its report to ``OUT/<probe>``;
    ``rigor`` adds contextuality on the trained models (at most ``contextuality.DEFAULT_LIMIT`` sentences).
    ``progress``: told "model i/N NAME · probe j/M PROBE: …" and each run's own progress, as a share of all runs.
    """
    common = dict(options=options, command=command, report=report, say=say, **run)
    timings: dict[str, float] = {}
    main = [s for s in specs if s.report is None]
    own = {s.name: (s, embedders, run) for s in specs if s.report is not None}
    if rigor:
        limit = min(run.get("limit") or contextuality.DEFAULT_LIMIT, contextuality.DEFAULT_LIMIT)
        trained = {m: e for m, e in embedders.items() if not is_random(m)}
        own[contextuality.NAME] = (contextuality.PROBE, trained, {**run, "limit": limit})
    runs = [len(main) * (1 + len(embedders))] + [1 + len(models) for _, models, _ in own.values()]
    ends = [sum(runs[: k + 1]) / max(sum(runs), 1) for k in range(len(runs))]  # each part's share of all runs
    t_all = time.perf_counter()
    _run_all(embedders, main, out / "runs", timings, progress=scaled(progress, 0.0, ends[0]), **common)
    timings["total"] = time.perf_counter() - t_all
    write_tables(out / "runs", out, None, timings=timings, command=command)
    for k, (spec, models, kw) in enumerate(own.values()):
        folder = out / spec.name
        _run_all(
            models, [spec], folder / "runs", {}, progress=scaled(progress, ends[k], ends[k + 1]), **{**common, **kw}
        )
        say(f"{spec.name} tables written to {spec.report(folder / 'runs', folder)}")
    return timings


def _run_all(
    embedders: dict[str, Embedder],
    specs: Sequence[ProbeSpec],
    results_dir: Path,
    timings: dict[str, float],
    say: Callable[[str], None],
    progress: ProgressFn | None = None,
    **request: Any,
) -> None:
    """Every probe's baselines once, then every (model, probe) into ``results_dir``; wall times into ``timings``."""
    total, m = len(specs) * (1 + len(embedders)), len(specs)
    step = lambda k, what: scaled(progress, k / total, (k + 1) / total, what)  # run k of all
    for j, spec in enumerate(specs):
        t = time.perf_counter()
        run_probe(
            spec, None, results_dir=results_dir, progress=step(j, f"baselines {j + 1}/{m} {spec.name}: "), **request
        )
        timings[f"{spec.name} baselines"] = time.perf_counter() - t
    for i, (name, emb) in enumerate(embedders.items()):
        for j, spec in enumerate(specs):
            told = step(m * (1 + i) + j, f"model {i + 1}/{len(embedders)} {name} · probe {j + 1}/{m} {spec.name}: ")
            try:
                spec.check_model(emb, request.get("options"))
            except ProbeInputError as exc:  # too few layers, no attention: said, and the others run
                say(f"   (skipped {spec.name}: {exc})")
                continue
            t = time.perf_counter()
            say(f"== {name}: {spec.name}")
            try:  # every option was checked before any model loaded: what is refused now is this data for this model
                run_probe(spec, emb, baselines=False, results_dir=results_dir, progress=told, **request)
            except ProbeInputError as exc:  # nothing to score (CKA of a few words, one-word sentences): said, run on
                say(f"   (skipped {spec.name}: {exc})")
                continue
            timings[f"{name} {spec.name}"] = time.perf_counter() - t


#: ``reproduce``'s options that choose what a run measures: ``--tables-only`` and ``--verify`` refuse them.
RUN_ONLY = ("models", "probes", "limit", "seed", "seeds", "rigor", "device")


def refuse_run_options(given: Sequence[str], mode: str) -> None:
    """ProbeInputError naming the options of a run (``RUN_ONLY``) ``given`` to a mode that reads saved results."""
    if given:
        flags, what = ", ".join("--" + name for name in given), "an option" if len(given) == 1 else "options"
        raise ProbeInputError(f"{mode} the saved results; drop {flags} ({what} of a run).")


def refuse_results_folder(results: str | Path | None, tables_only: bool) -> None:
    """``--results`` names the folder ``--tables-only`` reads: a run saves in OUT/runs and ``--verify`` checks
    them there (a run with ``--results X`` had saved in OUT/runs, nothing said)."""
    if results is not None and not tables_only:
        raise ProbeInputError(
            "--results: reproduce saves its runs in OUT/runs (--out) and --verify checks them there; --results names "
            "the folder --tables-only reads."
        )


def results_folder(out: Path, results: str | Path | None = None) -> Path:
    """Where ``--tables-only`` reads results: ``--results DIR`` when given, else ``OUT/runs`` when it holds
    a result, else ``<cache>/results`` (where the probe commands, the app and ``sweep`` save by default)."""
    if results is not None:
        if not Path(results).expanduser().is_dir():
            raise ProbeInputError(f"--results {results}: no such folder.")
        return Path(results).expanduser()
    return out / "runs" if any((out / "runs").glob("*.json")) else default_results_dir()


def write_reports(
    out: Path,
    results: str | Path | None = None,
    say: Callable[[str], None] = print,
    warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> list[Path]:
    """``--tables-only``: the tables of the results in ``results_folder(out, results)`` (said which) and
    the report of every probe with one of its own whose results are in ``OUT/<probe>/runs``; returns the
    Markdown paths. No result at all: one warning, and no ``tables.md`` is written (an old one stays)."""
    runs = results_folder(out, results)
    say(f"reading results from {runs}")
    md = write_tables(runs, out)
    if md is None:
        warn(f"warning: no results in {runs}; tables.md not written (give the results folder with --results DIR)")
    own = [s for s in all_probes() if s.report is not None and (out / s.name / "runs").is_dir()]
    return ([] if md is None else [md]) + [s.report(out / s.name / "runs", out / s.name) for s in own]


def random_twins(embedders: dict[str, Embedder]) -> list[str]:
    """``random:NAME@0`` for every contextual model of ``embedders`` (a static model has no layers to re-draw)."""
    return [
        random_name(m, 0)
        for m, e in embedders.items()
        if e.num_layers > 1 and not is_random(m) and random_name(m, 0) not in embedders
    ]


def verify(runs: Path, say: Callable[[str], None] = print) -> bool:
    """Whether every result in use in ``runs`` was produced by the shipped model as it is on disk now."""
    if not runs.is_dir():
        loose = next(runs.parent.glob("*__*.json"), None) is not None  # a results folder named as --out itself
        raise ProbeInputError(
            f"--verify: no results folder {runs} (it checks OUT/runs, where reproduce saves its runs)"
            + (f"; {runs.parent} holds result files itself: give --out the folder above their runs/." if loose else ".")
        )

    def shipped(model: str) -> bool:
        """A model of the zoo, or the zoo's architecture with random weights (``random:NAME@SEED``)."""
        return (parse_random(model)[0] if is_random(model) else model) in REGISTRY

    @functools.cache  # once per model, not per result: on a GPU machine each call loads it twice (CPU, GPU)
    def fingerprint_of(model: str) -> tuple[str, ...] | None:
        """The model's fingerprint in float32 on the CPU (the committed runs') and, on a GPU machine, at the
        precision it loads with there: a result of either is the shipped model's."""
        if not shipped(model):
            return None
        try:
            on_cpu = load_embedder(model, "cpu").fingerprint()
            return (on_cpu, load_embedder(model).fingerprint()) if default_device().type == "cuda" else (on_cpu,)
        except UnknownModelError:
            return None

    checks = verify_results(runs, fingerprint_of)
    if not checks:
        raise ProbeInputError(f"--verify: no model results in {runs}.")
    table = report(checks)
    say(table.to_string(index=False))
    both_none = table["recorded"].isna() & table["current"].isna()  # a baseline: no model, no fingerprint
    bad, stale = ~table["ok"], (table["recorded"] != table["current"]) & ~both_none
    edited, unsigned = table["rows"] == "edited", table["rows"] == "no digest"
    say(
        f"\n{(~bad).sum()} of {len(table)} results in use were produced by the shipped model, as written"
        + ("" if not stale.any() else f"; stale: {', '.join(sorted(set(table[stale]['model'])))} (re-run them)")
        + ("" if not edited.any() else f"; rows edited since they were saved: {', '.join(table[edited]['result'])}")
        + (
            ""
            if not unsigned.any()
            else f"; unsigned (no digest: saved before 2026-11-26, or not by the lab), so their rows cannot be "
            f"checked: {', '.join(table[unsigned]['result'])}. Re-run them; or, for results of before resampling "
            "units (2026-11-26) that you trust as they are, restate and sign them (files edited since they were "
            "signed are left out): "
            f"python -c \"from probes.reporting.restate import restate_dir; restate_dir('{runs}')\""
        )
    )
    return not bad.any()
