"""Which training schedule made a table's rows, said under the table when it is more than one.

A token probe's fits train under one of ``probes.estimators.classifier``'s schedules, and each run records which
(``probes.result_names.run_schedule``; the default moved from the early stop to the plateau schedule on 2026-12-07).
Only a non-default choice is named apart (``pos+linear-early-stop``), so a results folder that keeps early-stop runs of
some models beside plateau runs of others (runs from before that day, a model re-run since) builds one table of both.
Each row is right for its run, but the table would compare unlike fits without a word. ``schedule_note`` says which
models (and, where a model has both, which layers) came from which schedule; ``build_tables`` keeps it in the table's
``attrs`` (``SCHEDULE_NOTE``), and ``tables.md``, the per-dataset tables, the Reproduce page, the Probes page and the
Layer profile print it under the table or chart; ``python -m probes compare`` shows the schedules of rows that moved.
"""

from __future__ import annotations

import pandas as pd

from probes.estimators import RIGOR_METRICS
from probes.reporting import paper
from probes.result_names import SCHEDULED_PROBES, base_probe

SCHEDULE_NOTE = "schedule_note"  # the key of the note in a table's ``DataFrame.attrs``


#: The metrics a token probe's own fits score (an MDL row's block probes keep MDL's schedule: ``row_schedule``).
TRAINED_METRICS = RIGOR_METRICS[:3]


def table_rows(rows: pd.DataFrame, key: str, table: pd.DataFrame) -> pd.DataFrame:
    """The result rows (``probes.results.latest_rows``) of scheduled fits that table ``key`` shows: a scheduled
    probe's own table (``pos``, ``pos+mlp-256``: accuracy per layer; ``tag:DATASET:METRIC``: that dataset's metric),
    and the tables built on the POS probe's rows (``selectivity_mdl``, ``claims``, ``best_layer``, ``published_rigor``),
    of the models each shows. Every other table shows no such fit: no rows."""
    probe, _, rest = key.partition(":")
    if base_probe(probe) in SCHEDULED_PROBES:
        dataset, _, metric = rest.rpartition(":")
        picked = (rows.dataset == dataset) & (rows.metric == metric) if rest else rows.metric == "accuracy"
        return rows[(rows.probe == probe) & picked]
    if key not in ("selectivity_mdl", "claims", "best_layer", "published_rigor"):
        return rows.iloc[:0]
    rows = rows[rows.metric.isin(TRAINED_METRICS)]
    if key == "selectivity_mdl":
        return rows[rows.probe.isin(set(table.probe)) & rows.model.isin(set(table.model))]
    if key == "claims":  # its POS claims read the plain probe's rows
        return rows[(rows.probe == "pos") & rows.model.isin(set(table.model))]
    if key == "best_layer":  # "elmo-small L2" against "elmo-small L1"
        models = {cell.rpartition(" L")[0] for column in ("best", "against") for cell in table[column].astype(str)}
        return rows[rows.probe.isin(set(table.probe)) & (rows.metric == "accuracy") & rows.model.isin(models)]
    ours = {(p.our_model, p.our_layer) for p in paper.RIGOR_PUBLISHED}  # each published layer's counterpart
    return rows[(rows.probe == "pos") & pd.Series(list(zip(rows.model, rows.layer)), index=rows.index).isin(ours)]


def schedule_note(rows: pd.DataFrame) -> str | None:
    """A sentence naming the schedules of ``rows`` (their ``schedule`` column, ``probes.result_names.row_schedule``)
    and the models of each, when there are two or more; None when one schedule (or none: rows no such fit trained) made
    them all, or ``rows`` has no ``schedule`` column. A model under two schedules is listed under each with the layers
    (and metrics) each covers."""
    if "schedule" not in rows:
        return None
    scheduled = rows[rows.schedule.notna()]
    if scheduled.schedule.nunique() < 2:
        return None
    parts = []
    for schedule, part in scheduled.groupby("schedule", sort=True):
        models = []
        for model, of_model in part.groupby("model", sort=True):
            whole = scheduled[scheduled.model == model]
            covers = [
                f"{what} {', '.join(sorted(set(of_model[column]), key=order))}"
                for what, column, order in (("layers", "layer", _layer_key), ("metrics", "metric", str))
                if set(of_model[column]) != set(whole[column])
            ]
            models.append(f"{model} ({'; '.join(covers)})" if len(covers) else model)
        parts.append(f"{schedule}: {', '.join(models)}")
    return (
        f"These rows come from probes trained under {len(parts)} schedules ({'; '.join(parts)}). Fits of different "
        "schedules are not like for like: re-run the models of the older runs to compare them (a run under the "
        "default schedule replaces an older default run's rows; `--schedule early-stop` is saved under a probe name "
        "of its own; `probes.estimators.classifier`)."
    )


def _layer_key(layer: str) -> tuple:
    """Numbered layers first, in their order, then the named ones ("mean", "mix:…")."""
    return (0, int(layer), "") if layer.isdigit() else (1, 0, layer)


def note_schedules(tables: dict[str, pd.DataFrame], rows: pd.DataFrame) -> None:
    """Keep each table's ``schedule_note`` (if any) in its ``attrs`` under ``SCHEDULE_NOTE``."""
    for key, table in tables.items():
        note = schedule_note(table_rows(rows, key, table))
        if note:
            table.attrs[SCHEDULE_NOTE] = note
