"""What every probe returns (``ProbeResult``) and how results are stored and read back as one table.

One probe run = one JSON file ``<out_dir>/<model>__<probe>__<stamp>_<random>.json`` (never overwritten)::

    {"model": "minilm", "probe": "wsd", "dataset": "semcor→ALL", "fingerprint": "...",
     "params": {...}, "rows": [{"dataset": "ALL", "layer": "3", "metric": "F1", "value": 64.1, "n": 7253}, ...],
     "extra": {...},                         # free-form (e.g. learned scalar-mix weights)
     "command": "python -m probes wsd --model minilm", "timestamp": "2026-11-22T05:10:00+00:00"}

``digest`` (written by ``save_result``) is the SHA-256 of the canonical JSON of model, probe, dataset,
fingerprint and rows (:func:`content_digest`): ``reproduce --verify`` recomputes it, so a value edited by
hand, or a fingerprint set to null, is reported. The committed files of docs/results were given theirs
once (their rows unchanged).

``save_result(..., reuse=True)`` (``run_probe``'s baselines) writes nothing when the newest saved result of
the same model, probe, dataset and slice has the same digest: a re-run reuses that file.

``load_results(out_dir)`` flattens every file into a DataFrame with the columns ``COLUMNS`` (one row
per measurement; ``layer`` is a string: "0", "1", …, "mean", "baseline", "all λ=1" …). When the same
(model, probe, dataset, layer, metric) appears in several files, the newest file wins (a row marked
missing, ``value`` None, only where no file measured it). A run on a slice
(``--limit N``, ``params["limit"]``) is another dataset: its rows read back as ``DATASET (limit N)``
(:func:`sliced`), so a slice never replaces the full run in a table, nor its baseline the full baseline; the
tables of ``build_tables`` are built for each slice apart (``slice_of``, ``as_full_run``).
Files written before ``ProbeResult`` existed (no top-level ``dataset``) read back unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from corpora.paths import cache_dir
from corpora.temps import remove_stale_temps, temp_path
from probes.result_names import as_named_now, row_schedule

COLUMNS = ["model", "probe", "dataset", "layer", "metric", "value", "n", "lo", "hi", "unit", "clusters", "draws", "std"]
COLUMNS += ["seeds", "timestamp", "command", "schedule"]
KEY = ["model", "probe", "dataset", "layer", "metric"]
ROW_FIELDS = ("dataset", "layer", "metric", "value")
DIGESTED = ("model", "probe", "dataset", "fingerprint", "rows")  # what ``digest`` vouches for


def default_results_dir() -> Path:
    """Where a run's results go when no folder is named: the probe commands, the app's runs and ``sweep`` save
    there, and ``reproduce --tables-only`` and the app read it."""
    return cache_dir() / "results"


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


@dataclass
class ProbeResult:
    """One probe run on one model (or one no-embedding baseline).

    rows:    measurements, each {"dataset", "layer", "metric", "value"[, "n", "lo", "hi", "std"]} (lo/hi:
             the bootstrap 95% interval, ``probes.stats.intervals``; std: the spread over ``--seeds``,
             seeds: how many, ``probes.stats.seeds``); ``dataset`` there is the evaluation split ("ALL", "senseval2",
             "conll2000-test:pos"…), ``layer`` a layer spec label.
    dataset: the probe's data as a whole ("semcor→ALL", "conll2000"), "" in older files.
    params:  the request (layers, limits, seed…); ``extra``: timings, coverage, learned weights…
    """

    model: str
    probe: str
    rows: list[dict]
    dataset: str = ""
    fingerprint: str | None = None
    params: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    command: str = ""
    timestamp: str = ""
    digest: str | None = field(default=None, compare=False)  # as read from the file; save_result writes it

    def __post_init__(self) -> None:
        for row in self.rows:
            missing = set(ROW_FIELDS) - set(row)
            if missing:
                raise ValueError(f"Result row {row} lacks {sorted(missing)}.")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeResult:
        """From a parsed result file; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("A result file holds a JSON object.")
        for key in ("model", "probe", "rows"):
            if key not in data:
                raise ValueError(f"A result needs a '{key}' entry.")
        if not isinstance(data["rows"], list) or not all(isinstance(r, dict) for r in data["rows"]):
            raise ValueError("A result's 'rows' is a list of objects.")
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known and (v is not None or k == "fingerprint")})

    def stamped(self, command: str = "", limit: int | None = None) -> ProbeResult:
        """A copy with the time (if unset), the command line that produced it and the slice it ran on
        (``params["limit"]``, where the probe did not record it: :func:`sliced`)."""
        params = self.params if limit is None or "limit" in self.params else {**self.params, "limit": limit}
        return dataclasses.replace(
            self, timestamp=self.timestamp or now_iso(), command=command or self.command, params=params
        )


def content_digest(result: ProbeResult) -> str:
    """SHA-256 of the canonical JSON of ``DIGESTED`` (numbers as they read back from the file)."""
    data = {k: getattr(result, k) for k in DIGESTED}
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=float, separators=(",", ":"))
    return hashlib.sha256(json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


#: The options that run a probe on part of its *training* data, the test data whole (their runs are slices as a
#: ``--limit`` run is: kept apart from the full run in every table); the probes that declare them: WSD, mix.
TRAINING_SLICES = {"semcor_limit": "semcor-limit", "train_limit": "train-limit"}
SLICE_FLAGS = {"limit": "limit", **TRAINING_SLICES}  # every option that makes a slice -> its flag's name
_FLAG = "|".join(SLICE_FLAGS.values())
SLICE = re.compile(rf"^(?P<name>.*) \((?P<slice>(?:{_FLAG}) \d+(?:, (?:{_FLAG}) \d+)*)\)$")  # what sliced appends


def slice_label(params: dict | None, dataset: str) -> str | None:
    """The slice a run with ``params`` ran on, as its rows' datasets say it: "limit 20", "semcor-limit 100",
    "limit 20, train-limit 5"; None for the full data. A ``--limit`` the name already states (the lab's own
    ``semcor-first2000``, CKA's ``semcor-first40 vs B``) is left out; a name of yours that holds "first1" elsewhere
    (``news-first1@1a2b3c4d:test:UPOS``) does not count: its slice would replace its full run."""
    params = params or {}
    named = re.search(rf"-(first|limit){re.escape(str(params.get('limit')))}(?: vs .+)?$", dataset)
    parts = [f"{flag} {params[k]}" for k, flag in SLICE_FLAGS.items() if params.get(k) is not None]
    return ", ".join(p for p in parts if not (named and p.startswith("limit "))) or None


def sliced(dataset: str, label: str | None) -> str:
    """A row's dataset as tables show it: ``DATASET (limit N)`` (``label``: ``slice_label``) for a run on a slice;
    unchanged for a full run (``label`` None)."""
    return dataset if label is None else f"{dataset} ({label})"


def row_dataset(result: ProbeResult, row: dict) -> str:
    """The dataset ``row`` of ``result`` reads back as (:func:`sliced` by the run's ``--limit`` and training slice)."""
    return sliced(str(row["dataset"]), slice_label(result.params, str(row["dataset"])))


def slice_of(result: ProbeResult) -> str | None:
    """The slice ``result`` ran on ("limit 20", "semcor-limit 100"; None: the full data, or a name that says which
    slice it is, ``semcor-first2000``)."""
    return slice_label(result.params, str(result.dataset))


def as_full_run(result: ProbeResult) -> ProbeResult:
    """``result`` without its slice: its rows read back under their own dataset names, so tables built from one
    slice's results alone take the same shape as the full data's (``build_tables``)."""
    params = {k: v for k, v in (result.params or {}).items() if k != "limit" and k not in TRAINING_SLICES}
    return dataclasses.replace(result, params=params)


def split_slice(dataset: str) -> tuple[str, str | None]:
    """(name, slice) of a row's dataset: ``("ALL-noSE07:NOUN", "limit 3")`` for ``ALL-noSE07:NOUN (limit 3)``,
    ``("ALL", None)`` for ``ALL``."""
    m = SLICE.match(dataset)
    return (m["name"], m["slice"]) if m else (dataset, None)


def on_slice_of(dataset: str, like: str) -> str:
    """``dataset`` as a row of the same slice as ``like`` reads: ``semeval2007`` for ``ALL``, ``semeval2007 (limit 3)``
    for ``ALL (limit 3)``."""
    return sliced(dataset, split_slice(like)[1])


def results_frame(results: Iterable[ProbeResult]) -> pd.DataFrame:
    """The one flattening of results into a table with ``COLUMNS`` (``schedule``: ``row_schedule``)."""
    records = [
        {
            "model": r.model,
            "probe": r.probe,
            "dataset": row_dataset(r, row),
            "layer": str(row["layer"]),
            "metric": row["metric"],
            "value": row["value"],
            "n": row.get("n"),
            "lo": row.get("lo"),
            "unit": row.get("unit"),
            "clusters": row.get("clusters"),
            "draws": row.get("draws"),  # control-task label draws averaged (probes.estimators.control)
            "hi": row.get("hi"),
            "std": row.get("std"),
            "seeds": row.get("seeds"),
            "timestamp": r.timestamp,
            "command": r.command,
            "schedule": row_schedule(r, row),
        }
        for r in results
        for row in r.rows
    ]
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def _safe(name: Any) -> str:
    return re.sub(r"[^0-9A-Za-z._-]", "_", str(name))


def identical_saved(result: ProbeResult, out_dir: str | Path) -> Path | None:
    """The newest file under ``out_dir`` of the same model, probe, dataset and slice (:func:`slice_of`), if its rows
    are ``result``'s (the same :func:`content_digest`); else None."""
    key = (result.model, result.probe, result.dataset, slice_of(result))
    same = [
        (order, path, old)
        for order, path, old in _saved(out_dir, f"{_safe(result.model)}__{_safe(result.probe)}__*.json")
        if (old.model, old.probe, old.dataset, slice_of(old)) == key
    ]
    newest = max(same, key=lambda item: item[0], default=None)
    return newest[1] if newest and content_digest(newest[2]) == content_digest(result) else None


def other_versions(result: ProbeResult, out_dir: str | Path) -> int:
    """How many runs of ``result``'s model and probe saved under ``out_dir`` have another fingerprint: another
    version of the model under the same name (retrained, or another file or folder of that name), which
    :func:`current_model_runs` leaves out of every table once ``result`` is the newest."""
    if result.fingerprint is None:  # as current_model_runs: a run without one is no version of anything
        return 0
    runs = _saved(out_dir, f"{_safe(result.model)}__{_safe(result.probe)}__*.json")
    return sum(old.model == result.model and old.fingerprint not in (None, result.fingerprint) for _, _, old in runs)


def save_result(result: ProbeResult, out_dir: str | Path, reuse: bool = False) -> Path:
    """Write one probe run as ``<model>__<probe>__<stamp>_<random>.json``; returns the path.

    ``reuse`` (the baselines of ``run_probe``): when the newest saved result of the same model, probe,
    dataset and slice has the same rows (:func:`identical_saved`), write nothing and return its path, so
    re-runs do not pile up identical files.

    The file is written to a temporary, flushed to disk and linked into place under a name no other
    run has taken (two runs in the same second, or two processes, never overwrite each other). The
    file also records ``saved_ns`` (the save time in ns), so ``load_results`` can tell the newer of
    two runs stamped in the same second."""
    result = result.stamped()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    same = identical_saved(result, out) if reuse else None
    if same is not None:
        logging.getLogger(__name__).info("%s: an identical %s result is saved already, reused", same, result.model)
        return same
    stamp = re.sub(r"[^0-9A-Za-z]", "", result.timestamp)
    base = f"{_safe(result.model)}__{_safe(result.probe)}__{stamp}"
    remove_stale_temps(out, logging.getLogger(__name__), ".*.tmp")  # a killed save's (kill -9 between write and link)
    tmp = temp_path(out / f".{base}")  # named after this writer; the umask decides who may read it
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            data = {**result.to_json(), "digest": content_digest(result), "saved_ns": time.time_ns()}
            json.dump(data, fh, indent=1, ensure_ascii=False, default=float)
            fh.flush()
            os.fsync(fh.fileno())
        for _ in range(100):
            path = out / f"{base}_{secrets.token_hex(3)}.json"
            try:
                os.link(tmp, path)  # atomic, and fails rather than replace an existing file
            except FileExistsError:
                continue
            except OSError:  # no hard links on this file system
                if path.exists():
                    continue
                os.replace(tmp, path)
            return path
        raise FileExistsError(f"No free result file name for {base} in {out}.")
    finally:
        Path(tmp).unlink(missing_ok=True)


def saved_order(data: dict, path: Path) -> tuple:
    """Oldest first: by timestamp, then by save time (same-second runs), then by file name."""
    saved = data.get("saved_ns")
    return (str(data.get("timestamp") or ""), saved if isinstance(saved, int) else 0, path.name)


def _saved(
    out_dir: str | Path, pattern: str = "*.json", unreadable: list[Path] | None = None
) -> Iterator[tuple[tuple, Path, ProbeResult]]:
    """(``saved_order``, path, result) of every readable result file under ``out_dir`` matching ``pattern``;
    unreadable files are skipped with a warning naming them (a half-copied file never breaks the app, and
    never silently lets an older run stand in for it) and added to ``unreadable``."""
    for path in Path(out_dir).glob(pattern):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):  # valid JSON but not a result: [1, 2], null, "text"
                raise TypeError(f"a JSON {type(data).__name__}, not an object")
            yield saved_order(data, path), path, as_named_now(ProbeResult.from_json(data), content_digest)
        except (OSError, ValueError, TypeError) as exc:
            if unreadable is not None:
                unreadable.append(path)
            logging.getLogger(__name__).warning(
                "%s: not a readable result file (%s: %s); left out, so an older run of the same model and probe "
                "may show instead. Rerun it or remove the file.",
                path,
                type(exc).__name__,
                str(exc)[:120],
            )


def read_results(out_dir: str | Path, unreadable: list[Path] | None = None) -> list[ProbeResult]:
    """Every readable result under ``out_dir``, oldest first; the files left out go to ``unreadable`` (``_saved``)."""
    return [result for _, _, result in sorted(_saved(out_dir, unreadable=unreadable), key=lambda item: item[0])]


def newest_per_key(df: pd.DataFrame) -> pd.DataFrame:
    """The newest row (the last) of each ``KEY``, in ``df``'s order; a row marked missing (no value: a
    baseline that could not run) never hides a measured one."""
    measured = df["value"].notna()
    return pd.concat([df[~measured], df[measured]]).drop_duplicates(KEY, keep="last").sort_index()


def current_model_runs(results: list[ProbeResult]) -> list[ProbeResult]:
    """``results`` (oldest first) less the runs of an earlier version of a model: per model and probe, the newest
    run's fingerprint (the model's content) is the model; a run with another one (weights or tokenizer changed
    under the same name) would lend its layers to the newest run's row. Left-out runs are logged (info: the
    committed folders keep earlier versions' runs as history)."""
    newest = {(r.model, r.probe): r.fingerprint for r in results}
    kept, earlier = [], {}
    for r in results:
        current = newest[(r.model, r.probe)]
        if r.fingerprint is None or current is None or r.fingerprint == current:
            kept.append(r)
        else:
            earlier.setdefault((r.model, r.probe, current), []).append(r.fingerprint)
    for (model, probe, current), old in earlier.items():
        logging.getLogger(__name__).info(
            "%s %s: %d run(s) of an earlier version of the model (fingerprint %s) left out; the newest run's is %s.",
            model,
            probe,
            len(old),
            ", ".join(sorted(set(old))),
            current,
        )
    return kept


def latest_rows(results: list[ProbeResult]) -> pd.DataFrame:
    """``results`` (oldest first) as a DataFrame with ``COLUMNS``, runs of an earlier version of a model left out
    (``current_model_runs``); when several runs measured the same ``KEY``, the newest wins (``newest_per_key``)."""
    df = results_frame(current_model_runs(results))
    if df.empty:
        return df
    return newest_per_key(df).reset_index(drop=True)


def extras_of(results: list[ProbeResult], probe: str | None = None) -> list[dict]:
    """The free-form ``extra`` of every result (in the given order), e.g. learned mix weights."""
    return [
        {"model": r.model, "probe": r.probe, "timestamp": r.timestamp, **(r.extra or {})}
        for r in results
        if probe is None or r.probe == probe
    ]


def load_results(out_dir: str | Path) -> pd.DataFrame:
    """All results under ``out_dir`` as a DataFrame with ``COLUMNS`` (empty if there are none), newest per key."""
    return latest_rows(read_results(out_dir))


def load_extras(out_dir: str | Path, probe: str | None = None) -> list[dict]:
    """The ``extra`` of every full run under ``out_dir`` of the models as they are now (newest last): as in the tables
    (``latest_rows``), a slice's run (``--train-limit``) or an earlier version's never stands for the model's newest
    full run (the Layer profile's expected layers took the newest mix run of any kind)."""
    return extras_of([r for r in current_model_runs(read_results(out_dir)) if slice_of(r) is None], probe)
