"""The one way to run a probe: ``run_probe`` checks the request, runs the baselines and the probe, stamps and saves.

    from probes import run_probe
    run = run_probe("pos", "minilm", limit=200)      # a ProbeRun
    run.to_frame()                                    # every row: the model's and the baselines'

The command line (``python -m probes <probe>``), ``reproduce``, ``sweep`` (``cluster.tasks``), the app's
quick runs and its uploads all call this function, so option checks, seeding, the minimum-layers
check, the ``--layers all`` default and saving live here once.

Order (nothing is extracted or written before every check has passed):
1. the run context (``--limit``, ``--seeds``) and the probe's options (``ProbeSpec.options_from``);
2. the model (a name or reference is loaded, ``models.registry.load_embedder``, and moved to ``device``),
   its layer count (``ProbeSpec.check_model``), the layers (``parse_layer_specs`` against the model,
   where the probe reads layers; default ``all``), the results folder (``probes.errors.writable_dir``);
3. seeds (torch, numpy) from ``seed``;
4. baselines (``ProbeSpec.baselines``) unless ``baselines=False``;
5. the probe itself over ``seeds`` seeds (``probes.stats.seeds``);
6. every result stamped with ``command``, shown to ``report``, and saved under ``results_dir`` (None: not
   saved) once all of them are done: a run that fails half way leaves no file. A baseline whose rows equal
   the newest saved one's is not written again (``save_result(reuse=True)``). A run with no row (nothing to
   score in this data) is an error, not an empty file; a number that came out NaN or infinite (an undefined
   interval, a loss that diverged) is kept as None — "—" in a table, n/a in a summary (:func:`finite`): JSON
   has no NaN.

A check that a runner makes itself (an option combination only it understands) still ends the run
before anything is saved.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from probes.errors import ProbeInputError, ResultsNotSavedError, writable_dir
from probes.layers import parse_layer_specs
from probes.registry import ProbeSpec, ProgressFn, RunContext, get_probe
from probes.results import ProbeResult, other_versions, results_frame, save_result
from probes.stats.seeds import CLAIM_SEEDS, run_with_seeds

if TYPE_CHECKING:
    from models.base import Embedder

ReportFn = Callable[[ProbeResult], None]


@dataclass
class ProbeRun:
    """What ``run_probe`` returns.

    result:    the model's result (None when only baselines were asked for: ``model=None``).
    baselines: the probe's baseline results on the same data.
    saved:     the files written, baselines first (empty when ``results_dir`` was None).
    notes:     e.g. that runs of another version of the model under its name no longer show in the tables.
    """

    result: ProbeResult | None
    baselines: list[ProbeResult] = field(default_factory=list)
    saved: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a person should know about the saved run

    @property
    def results(self) -> list[ProbeResult]:
        """The model's result first, then the baselines."""
        return ([self.result] if self.result is not None else []) + self.baselines

    def to_frame(self) -> pd.DataFrame:
        """Every row of every result, one table (``probes.results.results_frame``)."""
        return results_frame(self.results)


def load_model(model: str | Embedder, device: str | None = None) -> Embedder:
    """``model`` itself or, for a name or reference, the loaded model; moved to ``device`` when given."""
    if isinstance(model, str):
        from models.registry import load_embedder  # lazy: the model zoo imports torch (`python -m probes stats`)

        model = load_embedder(model, device)  # the registered device gives way to this one
    if device is not None:
        model.to(device)
    return model


def seed_everything(seed: int) -> None:
    """numpy's global generator, for code that draws from it unseeded. torch's is not touched here: every draw of the
    lab's from it is seeded where it is made (``models.base.seeded``: a fit, a random twin's weights), and seeding it
    from a run's start reseeded another session's fit mid-way (or, under the lock, waited for that whole fit)."""
    np.random.seed(seed)


def finite(value: Any) -> Any:
    """``value`` with each NaN or infinite float as None, through dicts, lists, tuples and float arrays."""
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all():
        return finite(value.tolist())
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):  # a namedtuple becomes a plain tuple: JSON writes both as a list
        return (list if isinstance(value, list) else tuple)(finite(v) for v in value)
    return value


def run_probe(
    probe: str | ProbeSpec,
    model: str | Embedder | None,
    *,
    layers: str | None = "all",
    limit: int | None = None,
    options: dict[str, Any] | None = None,
    seed: int = 0,
    seeds: int | None = 1,
    device: str | None = None,
    baselines: bool = True,
    results_dir: str | Path | None = None,
    command: str | None = None,
    progress: ProgressFn | None = None,
    show_progress: bool = True,
    feature_root: Path | None = None,
    report: ReportFn | None = None,
    before: Callable[[Embedder], None] | None = None,
) -> ProbeRun:
    """Run ``probe`` on ``model`` (a name, a reference or a loaded ``Embedder``; None: baselines only).

    layers:  ``--layers`` of a probe that reads layers ("all", None = "all", "0,2", "mean", "mix:…").
    options: the probe's own options by name (CLI strings or values; ``ProbeSpec.options``); names of
             other probes' options are ignored, so a whole parsed command line can be passed.
    report:  sees each result, stamped, as soon as it is done.
    before:  called with the loaded model once every check has passed, before any baseline or probe runs
             (the command line prints its estimate there: ``probes.estimate``).
    progress: told (fraction of the whole, what is happening now) all along (``probes.progress``).
    Every bad request raises a ``LabError`` (``ProbeInputError``, ``UnknownModelError``, …) before any
    feature is extracted or any file written.
    """
    spec = probe if isinstance(probe, ProbeSpec) else get_probe(probe)
    if model is None and not baselines:
        raise ProbeInputError(f"Nothing to run: give a model or ask for the {spec.name} baselines.")
    ctx = RunContext(
        limit=limit,
        device=device,
        seed=seed,
        progress=progress,
        show_progress=show_progress,
        feature_root=feature_root,
        seeds=seeds if seeds is not None else CLAIM_SEEDS if spec.trains else 1,
    )
    opts = spec.options_from(options or {})
    if model is not None and spec.embeds is not None:
        spec.embeds(limit, opts)  # reads the data (≤ 0.3 s warm): a missing dataset is said before a model loads
    if progress is not None and isinstance(model, str):
        progress(0.0, f"loading {model}")
    emb = None if model is None else load_model(model, device)
    specs = None
    if emb is not None:
        spec.check_model(emb, opts)
        specs = parse_layer_specs(layers, emb.num_layers, emb.info.layer_ids) if spec.uses_layers else None
    out = None if results_dir is None else writable_dir(results_dir, "--results")
    if before is not None and emb is not None:
        before(emb)
    seed_everything(seed)

    def done(res: ProbeResult) -> ProbeResult:
        if not res.rows:
            raise ProbeInputError(
                f"The {spec.name} run of {res.model} gave no result: nothing in this data could be scored (too few "
                "sentences, words or dependencies of the kind it measures). Nothing was saved."
            )
        res = dataclasses.replace(res, rows=finite(res.rows), extra=finite(res.extra)).stamped(command or "", limit)
        if report is not None:
            report(res)
        return res

    if progress is not None and baselines:
        progress(0.0, f"{spec.name} baselines")
    run = ProbeRun(None, [done(b) for b in spec.baselines(ctx, **opts)] if baselines else [])
    if emb is not None:
        run.result = done(run_with_seeds(spec, emb, specs, ctx, **opts))
    if out is not None:
        if run.result is not None and (n := other_versions(run.result, out)):
            run.notes.append(
                f"{out} holds {n} run(s) of {run.result.model!r} ({spec.name}) with another fingerprint: another "
                "version of the model under this name (retrained, or another file or folder so named). The tables "
                "now show this run's; a different model needs its own name (python -m models add NAME PATH)."
            )
        try:
            saved = [save_result(res, out, reuse=True) for res in run.baselines]  # identical baselines: reused
            run.saved = saved + ([save_result(run.result, out)] if run.result else [])
        except OSError as exc:  # a full disk after the whole run: the numbers travel with the error
            raise ResultsNotSavedError(out, exc, run) from exc
    return run
