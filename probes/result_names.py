"""What a result's names say about its run, in one place, and files of earlier versions read under today's names.

A run with settings other than the defaults is named apart, so that it never replaces the default run's rows in a
table or chart: another probe family in the probe name ("pos+mlp-256"), the structural probe's rank and epochs and
the span probe's pooling in the task part of each row's dataset ("…:test:tree (rank 8)", "…:test:span (endpoints
pooling)"). The probes name their results with these functions; ``probes.results`` reads every file through
:func:`as_named_now`, because earlier versions wrote those settings only in ``params``: an MLP run saved as "pos"
before 2026-11-24, and rank-8 or endpoint-pooled runs as ":tree" and ":span" before 2026-11-28 read as default runs
(a helper's audit of files kept across an upgrade, round thirteen of docs/reliability.md).

The training schedule is the one default choice a run's name does not carry (the default moved on 2026-12-07, and
earlier runs recorded none): :func:`run_schedule` reads it from the run's record, :func:`row_schedule` per row, so
that a table can say when its rows come from more than one (``probes.reporting.schedule_notes``).

Light on purpose (no torch): every reader of result files imports it.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from typing import Any, TypeVar

from probes.estimators import EARLY_STOP, MDL_METRICS

Result = TypeVar("Result", bound=Any)  # ``probes.results.ProbeResult``, which imports this module

FAMILY_SEPARATOR = "+"  # "pos+mlp-256": the probe run with another family (``RigorOptions.probe_name``)
DEFAULT_FAMILY = "linear"  # the default family's label: its runs keep the plain probe name

TREE = "tree"  # the structural probe's task
TREE_EPOCHS = 6  # its default training epochs
SPAN = "span"  # the span probe's task
SPAN_POOLINGS = ("mean", "endpoints")  # its poolings, the default first


def base_probe(probe: str) -> str:
    """The probe a result's probe name runs ("pos+mlp-256" -> "pos")."""
    return probe.split(FAMILY_SEPARATOR, 1)[0]


def family_slug(label: str) -> str:
    """A probe family's label without spaces, for a probe name ("mlp-256", "linear-dropout0.2-wd0.1")."""
    return label.replace(" (", "-").replace(", ", "-").replace(" ", "").rstrip(")")


def tree_task(rank: int | None, epochs: int) -> str:
    """The structural probe's task part of a row's dataset: ``tree``, with the probe's settings where they are not
    the defaults (``tree (rank 2, 3 epochs)``)."""
    settings = [f"rank {rank}"] * (rank is not None) + [f"{epochs} epochs"] * (epochs != TREE_EPOCHS)
    return TREE + (f" ({', '.join(settings)})" if settings else "")


def span_task(pooling: str) -> str:
    """The span probe's task part of a row's dataset: ``span``, or ``span (endpoints pooling)``."""
    return SPAN if pooling == SPAN_POOLINGS[0] else f"{SPAN} ({pooling} pooling)"


def _setting(result, key: str, cast: Callable, flag: str):
    """A run's setting ``key`` from its ``params``; for a baseline, which did not record it (the chain tree and the
    majority label are the same whatever the probe's settings, but are named with the run's task so that they sit in
    its table), from its own command line (``python -m probes structural … --epochs 4``). None: not given."""
    params = result.params or {}
    if key in params:
        return params[key]
    try:
        words = shlex.split(result.command or "")
    except ValueError:
        return None
    at = words.index("probes") + 1 if "probes" in words else len(words)
    if words[at : at + 1] != [result.probe]:
        return None  # another command's flags (``reproduce``'s ``--rank`` is POS's)
    values = [b for a, b in zip(words, words[1:]) if a == flag]
    values += [w.split("=", 1)[1] for w in words if w.startswith(f"{flag}=")]
    try:
        return cast(values[-1]) if values else None
    except ValueError:
        return None


def as_named_now(result: Result, digest: Callable[[Result], str]) -> Result:
    """``result`` (as read from its file) named as this version names it: unchanged when it is (every file written
    since 2026-11-28), else a copy with the probe name or the rows' task part its ``params`` call for, signed again
    (``digest``: ``probes.results.content_digest``) where its file's digest held, so ``verify`` judges the file."""
    params = result.params or {}
    probe, rows = result.probe, result.rows
    family = params.get("probe_family")
    if isinstance(family, str) and family != DEFAULT_FAMILY and FAMILY_SEPARATOR not in probe:
        probe = f"{probe}{FAMILY_SEPARATOR}{family_slug(family)}"
    task = {
        "structural": lambda: (
            TREE,
            tree_task(
                _setting(result, "rank", int, "--rank"), _setting(result, "epochs", int, "--epochs") or TREE_EPOCHS
            ),
        ),
        SPAN: lambda: (SPAN, span_task(_setting(result, "pooling", str, "--pooling") or SPAN_POOLINGS[0])),
    }.get(result.probe, lambda: None)()
    if task is not None and task[0] != task[1]:
        old, new = f":{task[0]}", f":{task[1]}"
        rows = [
            {**row, "dataset": str(row["dataset"])[: -len(old)] + new} if str(row["dataset"]).endswith(old) else row
            for row in rows
        ]
    if probe == result.probe and rows == result.rows:
        return result
    named = dataclasses.replace(result, probe=probe, rows=rows)
    signed = result.digest is not None and result.digest == digest(result)
    return dataclasses.replace(named, digest=digest(named)) if signed else named


#: The probes whose fits follow ``probes.estimators.classifier``'s schedules (``probes.tasks.token_labels``, ``span``),
#: whatever their family ("pos+mlp-256").
SCHEDULED_PROBES = ("pos", "tag", "span")
POLISHED = " + L-BFGS polish"  # after a schedule's name: its fits were finished by ``probes.estimators.polish``


def run_schedule(result: Result) -> str | None:
    """The training schedule of ``result``'s probe fits: ``extra["schedule"]``; for a trained run of a scheduled probe
    that did not record one (its fits' ``history``, no ``schedule``: every run before 2026-12-07), the early stop, the
    only schedule then; None for a run that trained no such fit (a baseline, WSD, the λ tagger). One gap: ``span`` runs
    saved in the half hour between commits fc084df and 9731445 (2026-12-07 evening) trained under the plateau schedule
    without recording it, and read as the early stop's. A run whose fits went on to the L-BFGS polish
    (``probes.estimators.polish``, since the same night: small training sets only) reads ``"plateau + L-BFGS polish"``,
    so that a small plateau fit saved before the polish existed is told apart from one saved after."""
    extra = result.extra or {}
    if extra.get("schedule"):
        return str(extra["schedule"]) + (POLISHED if _polished(extra) else "")
    trained = "history" in extra and base_probe(result.probe) in SCHEDULED_PROBES
    return EARLY_STOP if trained else None


def _polished(extra: dict) -> bool:
    """Did the run's fits go on to the L-BFGS polish (``probes.estimators.polish``: its rounds are history entries of
    their own, one at least whenever a fit was small enough to try it)?"""
    history = extra.get("history")
    fits = history.values() if isinstance(history, dict) else []
    return any(isinstance(entry, dict) and "polish" in entry for fit in fits for entry in fit or [])


def row_schedule(result: Result, row: dict) -> str | None:
    """The schedule that trained ``row``'s fits: its run's (``run_schedule``), but None for an MDL row
    (``probes.estimators.MDL_METRICS``): its block probes train under MDL's own schedule whatever the run's, so MDL rows
    of runs either side of the change are alike."""
    return None if row["metric"] in MDL_METRICS else run_schedule(result)
