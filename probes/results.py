"""Probe results as small JSON files the app (and ``reproduce``) read back as one table.

One probe run = one JSON file ``<out_dir>/<model>__<probe>__<stamp>.json``::

    {"model": "minilm", "probe": "wsd", "command": "python -m probes wsd --model minilm",
     "timestamp": "2026-11-22T05:10:00+00:00", "fingerprint": "...", "params": {...},
     "rows": [{"dataset": "ALL", "layer": "3", "metric": "F1", "value": 64.1, "n": 7253}, ...],
     "extra": {...}}                          # free-form (e.g. learned scalar-mix weights)

``load_results(out_dir)`` flattens every file into a DataFrame with the columns
``model, probe, dataset, layer, metric, value, n, timestamp, command`` (one row per measurement;
``layer`` is a string: "0", "1", …, "mean", "baseline", "λ=1" …). When the same
(model, probe, dataset, layer, metric) appears in several files, the newest file wins.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

COLUMNS = ["model", "probe", "dataset", "layer", "metric", "value", "n", "timestamp", "command"]
KEY = ["model", "probe", "dataset", "layer", "metric"]


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def save_result(result: dict, out_dir: str | Path) -> Path:
    """Write one probe run (see module docstring) atomically; returns the file path.

    Required keys: model, probe, rows (list of dicts with dataset, layer, metric, value[, n]).
    """
    for key in ("model", "probe", "rows"):
        if key not in result:
            raise ValueError(f"A result needs a '{key}' entry.")
    for row in result["rows"]:
        missing = {"dataset", "layer", "metric", "value"} - set(row)
        if missing:
            raise ValueError(f"Result row {row} lacks {sorted(missing)}.")
    result = dict(result)
    result.setdefault("timestamp", now_iso())
    result.setdefault("command", "")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = re.sub(r"[^0-9A-Za-z]", "", result["timestamp"])
    safe = lambda s: re.sub(r"[^0-9A-Za-z._-]", "_", str(s))  # noqa: E731
    path = out / f"{safe(result['model'])}__{safe(result['probe'])}__{stamp}.json"
    fd, tmp = tempfile.mkstemp(dir=out, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(result, fh, indent=1, ensure_ascii=False, default=float)
    os.replace(tmp, path)
    return path


def load_results(out_dir: str | Path) -> pd.DataFrame:
    """All results under ``out_dir`` as a DataFrame with ``COLUMNS`` (empty if there are none).

    Unreadable files are skipped (a half-copied file never breaks the app).
    """
    records = []
    for path in sorted(Path(out_dir).glob("*.json")):
        try:
            res = json.loads(path.read_text())
            rows = res["rows"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for row in rows:
            records.append({
                "model": res.get("model"), "probe": res.get("probe"),
                "dataset": str(row.get("dataset")), "layer": str(row.get("layer")),
                "metric": row.get("metric"), "value": row.get("value"), "n": row.get("n"),
                "timestamp": res.get("timestamp"), "command": res.get("command", ""),
            })
    df = pd.DataFrame.from_records(records, columns=COLUMNS)
    if df.empty:
        return df
    df = df.sort_values("timestamp", kind="stable").drop_duplicates(KEY, keep="last")
    return df.reset_index(drop=True)


def load_extras(out_dir: str | Path, probe: str | None = None) -> list[dict]:
    """The free-form ``extra`` of every result file (newest last), e.g. learned mix weights."""
    out = []
    for path in sorted(Path(out_dir).glob("*.json")):
        try:
            res = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if probe is None or res.get("probe") == probe:
            out.append({"model": res.get("model"), "probe": res.get("probe"),
                        "timestamp": res.get("timestamp"), **(res.get("extra") or {})})
    return sorted(out, key=lambda r: r.get("timestamp") or "")
