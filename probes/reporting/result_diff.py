"""Compare two result directories row by row: did a change (a refactor, a new machine) move a number?

    python -m probes compare docs/results/runs /tmp/verify/runs --models glove-6b-50d

Rows are matched on (model, probe, dataset, layer, metric), each directory's newest result per key. A candidate
file that cannot be read is an error, not a file left out: the rows it holds would go unchecked. Where a row that
differs was trained under another schedule than its reference row (an early-stop run against a plateau one), the two
schedules are shown beside every row that differs.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from probes.errors import ProbeInputError
from probes.results import KEY, latest_rows, load_results, read_results


def compare_results(
    reference: Path, candidate: Path, models: list[str] | None = None, tolerance: float = 0.0
) -> tuple[pd.DataFrame, int]:
    """(rows whose value differs by more than ``tolerance``, that the reference lacks or that either marks
    missing (no value), rows compared).

    Only keys present in the candidate (and, with ``models``, of those models) are checked against the
    reference, so a partial re-run compares what it re-ran.
    """
    if not math.isfinite(tolerance) or tolerance < 0:  # NaN compares as never over: every row "equal"
        raise ProbeInputError(f"--tolerance {tolerance}: give a difference of 0 or more.")
    broken: list[Path] = []
    ref, cand = load_results(reference), latest_rows(read_results(candidate, unreadable=broken))
    if broken:  # its rows would go unchecked: "all equal" of what could be read
        files = ", ".join(sorted(p.name for p in broken))
        raise ProbeInputError(
            f"{candidate}: {len(broken)} result file{'s' * (len(broken) > 1)} cannot be read ({files}), so the rows "
            "they hold cannot be compared. Rerun them or remove the files."
        )
    for role, folder, rows in (("reference", reference, ref), ("candidate", candidate, cand)):
        if rows.empty:  # a missing reference read as "0 of N rows equal", naming nothing
            what = "does not exist" if not folder.exists() else "holds no readable result files"
            raise ProbeInputError(f"The {role} folder {folder} {what}.")
    if models:
        held = sorted(set(cand["model"]))
        cand = cand[cand["model"].isin(models)]
        if cand.empty:
            which = "that model" if len(models) == 1 else "those models"
            raise ProbeInputError(
                f"--models {','.join(models)}: {candidate} has no results of {which}; it has {', '.join(held)}."
            )
    kept = KEY + ["value", "schedule"]
    merged = cand[kept].merge(ref[kept], on=KEY, how="left", suffixes=("", "_reference"), indicator=True)
    merged["diff"] = merged["value"].astype(float) - merged["value_reference"].astype(float)
    missing = merged["value"].isna() | merged["value_reference"].isna()  # or marked missing: never "equal"
    bad = merged[missing | (merged["diff"].abs() > tolerance)]
    # the training schedules, shown where a row the reference holds differs in it (``row_schedule``): why it moved
    other = (bad["_merge"] == "both") & (bad["schedule"].fillna("") != bad["schedule_reference"].fillna(""))
    shown = ["value", "value_reference", "diff"] + (["schedule", "schedule_reference"] if other.any() else [])
    bad = bad[KEY + shown]
    return bad.reset_index(drop=True), len(merged)
