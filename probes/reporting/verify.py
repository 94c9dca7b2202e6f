"""Were the committed results produced by the models that ship, and are their numbers as written?
(``python -m probes reproduce --verify``)

Every result file records the content fingerprint of the model that produced it
(``Embedder.fingerprint``: a hash of the weights, config, tokenizer and options — no path, so the same
on every clone) and the ``digest`` of its content (``probes.results.content_digest``: model, probe,
dataset, fingerprint and rows). A result is *in use* when at least one of its rows is the newest for its
key, i.e. shows up in the tables. For each result in use:

- the digest must equal the one recomputed from the file: a number edited by hand, or a fingerprint
  removed, is reported as "edited"; a file with no digest (not written by ``save_result``) as "no digest";
- a result of a registered model must carry a fingerprint equal to the fingerprint of the model as it is
  on disk now; otherwise the row describes other weights (a retrained asset, an older vectors file) and
  is reported as stale. A missing fingerprint on a model's result is an error too (it would pass for a
  baseline). Baseline rows (first sense, majority tag) come from the data, not from a model: no
  fingerprint, but their digest is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from probes.results import ProbeResult, content_digest, current_model_runs, newest_per_key, read_results, results_frame


@dataclass(frozen=True)
class Check:
    file: str
    model: str
    probe: str
    recorded: str | None
    current: str | None
    rows_in_use: int
    rows: str = "ok"  # "ok", "edited" or "no digest"

    @property
    def ok(self) -> bool:
        return self.recorded == self.current and self.rows == "ok"


def results_in_use(results: list[ProbeResult]) -> list[tuple[ProbeResult, int]]:
    """Each result (oldest first) with the number of its rows that the tables show: the newest for their key
    among the runs of each model's current version (``current_model_runs``), as ``latest_rows`` picks them."""
    results = current_model_runs(results)
    frame = results_frame(results)
    if frame.empty:
        return []
    owner = [i for i, r in enumerate(results) for _ in r.rows]
    frame["owner"] = owner
    winners = newest_per_key(frame)["owner"].value_counts()
    return [(results[i], int(n)) for i, n in sorted(winners.items())]


def rows_state(result: ProbeResult) -> str:
    """ "ok" when the recorded digest matches the content, else "edited" or "no digest"."""
    if not result.digest:
        return "no digest"
    return "ok" if result.digest == content_digest(result) else "edited"


def verify_results(runs_dir: str | Path, fingerprint_of: Callable[[str], str | tuple[str, ...] | None]) -> list[Check]:
    """A Check per result in use under ``runs_dir`` (``fingerprint_of(model)``: the current fingerprint, or those
    of the precisions the model runs at here — float32 on the CPU, half on a GPU, each its own fingerprint — or None
    for a name that is not a model, e.g. a baseline)."""
    checks = []
    for result, n in results_in_use(read_results(runs_dir)):
        current = fingerprint_of(result.model)
        if isinstance(current, tuple):
            current = result.fingerprint if result.fingerprint in current else current[0]
        name = f"{result.model}__{result.probe} of {result.timestamp}"
        checks.append(Check(name, result.model, result.probe, result.fingerprint, current, n, rows_state(result)))
    return checks


def report(checks: list[Check]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model": c.model,
                "probe": c.probe,
                "result": c.file,
                "rows in use": c.rows_in_use,
                "recorded": c.recorded,
                "current": c.current,
                "rows": c.rows,
                "ok": c.ok,
            }
            for c in checks
        ]
    )
