"""Restate the intervals of results saved before resampling units existed, on the built-in test sets' units.

    python -c "from probes.reporting.restate import restate_dir; restate_dir('docs/results/runs')"

A result saved before ``probes.stats.units`` resampled test instances as if independent. Its values, n and kept
per-instance outcomes are right; only its intervals are too narrow. This recomputes, for every row whose outcomes
the result kept (or can be read from kept outcomes: WSD's per-POS rows are subsets of ALL, or of ALL w/o SE07 since
2026-12-06), the interval a run today computes — the cluster bootstrap over the built-in test set's documents (WSD
framework sets) or sentences (CoNLL-2000) — and records the units in ``extra["units"]``. Span F1 rows already
resampled sentences and say so. Rows whose outcomes were not kept (control accuracy, selectivity) keep their
interval and state its unit: ``instance``. The file keeps its name, timestamp and
command; its digest is recomputed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import numpy as np

from corpora.temps import write_atomically
from probes.reporting.verify import rows_state
from probes.results import ProbeResult, content_digest
from probes.stats.intervals import accuracy_interval, instances
from probes.stats.units import SENTENCE, Units, keep_units, wsd_units
from probes.tasks.conll import conll_slice
from probes.tasks.tag import load_splits
from probes.tasks.wsd.scoring import BY_POS_SET, UPOS
from probes.tasks.wsd.sources import builtin_test

Subset = tuple[str, np.ndarray | None, Units]  # (dataset whose outcomes were kept, rows of it, units)
OUTCOME_METRICS = ("accuracy", "F1", "P", "R")  # the metrics the kept outcomes score (not control, selectivity)


def builtin_subsets() -> dict[str, Subset]:
    """dataset name -> how to read its outcomes and units, for the built-in WSD and CoNLL-2000 test sets."""
    out: dict[str, Subset] = {}
    test = builtin_test(None)
    for name, idx in test.groups.items():
        out[name] = (name, None, wsd_units([test.ids[i] for i in idx]))
    for split in ("ALL", BY_POS_SET):  # the per-POS rows: on ALL until 2026-12-06, since on ALL w/o SE07
        for tag in UPOS:
            idx = np.array([j for j, i in enumerate(test.groups[split]) if test.poses[i] == tag])
            if idx.size:
                out[f"{split}:{tag}"] = (split, idx, out[split][2].take(idx))
    conll = Units.from_sizes(SENTENCE, [len(s.words) for s in conll_slice("test", None)])
    for name in ("conll2000-test", "conll2000-test:pos", "conll2000-test:chunk"):
        out[name] = (name, None, conll)
    return out


TAG_PARAMS = ("format", "column", "word_column", "skip_label", "name", "train", "dev", "test", "limit", "scheme")


def tag_subsets(params: dict) -> dict[str, Subset]:
    """The evaluation splits of a ``tag`` run on files (its recorded params ``TAG_PARAMS``), each with its
    sentences as units."""
    options = {k: params.get(k) for k in ("format", "column", "word_column", "skip_label", "name")}
    options.update({role: params[role] for role in ("train", "dev", "test") if params.get(role)})
    _, _, _, evals = load_splits(params.get("limit"), scheme=params.get("scheme") or "tag", **options)
    return {s.name: (s.name, None, s.units) for s in evals}


def restate(result: ProbeResult, subsets: dict[str, Subset]) -> ProbeResult:
    """The result with every restatable row's interval on its test set's units (see the module docstring)."""
    rows, extra = [], dict(result.extra or {})
    for row in result.rows:
        row = dict(row)
        subset = subsets.get(row["dataset"])
        kept = None if subset is None else instances(result, subset[0], str(row["layer"]))
        if subset is not None and kept is not None and subset[1] is not None:
            kept = kept[subset[1]]
        units = subset[2] if subset is not None else None
        if units is not None and row.get("metric") == "chunk_F1":
            row.update(units.row_fields())  # resampled sentences already
        elif row["metric"] in OUTCOME_METRICS and kept is not None and units is not None and len(units) == len(kept):
            if row["metric"] in ("F1", "P", "R") and round(100 * kept.mean(), 2) != row["value"]:
                rows.append({**row, "unit": "instance", "clusters": row["n"]})  # unanswered instances: not restated
                continue
            row["lo"], row["hi"] = accuracy_interval(kept, units=units, seed=int(result.params.get("seed", 0)))
            row.update(units.row_fields())
            if subset[1] is None:
                keep_units(extra, row["dataset"], units)
        elif "lo" in row:
            row.update({"unit": "instance", "clusters": row.get("n")})
        rows.append(row)
    return dataclasses.replace(result, rows=rows, extra=extra)


def restate_dir(path: str | Path) -> int:
    """Restate every result file under ``path`` in place; returns how many changed. A file whose digest no longer
    holds (its rows edited since it was saved) is left as it is and named: signing it would make ``--verify`` pass
    it. A file with no digest (saved before results were signed) is signed as it reads now."""
    subsets, changed, tag_files_read = builtin_subsets(), 0, set()
    for file in sorted(Path(path).glob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        result = ProbeResult.from_json(data)
        if rows_state(result) == "edited":
            logging.getLogger(__name__).warning(
                "%s: edited since it was saved (its digest does not hold); not restated", file
            )
            continue
        files = tuple(result.params.get(k) for k in TAG_PARAMS)
        if result.probe == "tag" and files not in tag_files_read:  # read each file set once, not once per model
            subsets.update(tag_subsets(result.params))
            tag_files_read.add(files)
        new = restate(result, subsets)
        out = {**data, **new.to_json(), "digest": content_digest(new)}
        if out != data:
            write_atomically(file, json.dumps(out, indent=1, ensure_ascii=False, default=float))  # never cut
            changed += 1
    return changed
