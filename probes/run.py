"""The one way to run a probe: ``run_probe`` checks the request, runs the baselines and the probe, stamps and saves.

    from probes import run_probe
    run = run_probe("pos", "minilm", limit=200)      # a ProbeRun
    run.to_frame()                                    # every row: the model's and the baselines'

The command line (``python -m probes <probe>``), ``reproduce``, ``sweep`` (``cluster.tasks``), the app's
quick runs and its uploads all call this function, so option checks, seeding, the minimum-layers
check, the ``--layers all`` default and saving live here once.

Order (nothing is extracted or written before every check has passed):
1. options (``ProbeSpec.options_from``), layers (``parse_layer_specs`` against the model), the
   model's layer count (``ProbeSpec.check_model``), the results folder;
2. seeds (torch, numpy) from ``request.seed``;
3. baselines (``ProbeSpec.baselines``) unless ``baselines=False``;
4. the probe itself over ``request.seeds`` seeds (``probes.stats.seeds``);
5. every result stamped with ``command`` and saved under ``results_dir`` (None: not saved).

TODO(run-path helper): implementation; the signature below is what callers code against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from probes.registry import ProbeSpec
from probes.results import ProbeResult, results_frame

ProgressFn = Callable[[float, str], None]


@dataclass
class ProbeRun:
    """What ``run_probe`` returns.

    result:    the model's result (None when only baselines were asked for: ``model=None``).
    baselines: the probe's baseline results on the same data.
    saved:     the files written (empty when ``results_dir`` was None).
    """

    result: ProbeResult | None
    baselines: list[ProbeResult] = field(default_factory=list)
    saved: list[Path] = field(default_factory=list)

    @property
    def results(self) -> list[ProbeResult]:
        """The model's result first, then the baselines."""
        return ([self.result] if self.result is not None else []) + self.baselines

    def to_frame(self) -> pd.DataFrame:
        """Every row of every result, one table (``probes.results.results_frame``)."""
        return results_frame(self.results)


def run_probe(
    probe: str | ProbeSpec,
    model: Any,
    *,
    layers: str = "all",
    limit: int | None = None,
    options: dict[str, Any] | None = None,
    seed: int = 0,
    seeds: int = 1,
    device: str | None = None,
    baselines: bool = True,
    results_dir: str | Path | None = None,
    command: str | None = None,
    progress: ProgressFn | None = None,
    show_progress: bool = True,
    feature_root: Path | None = None,
) -> ProbeRun:
    """Run ``probe`` on ``model`` (a name, a reference or a loaded ``Embedder``; None: baselines only).

    options: the probe's own options by name (CLI strings or values; ``ProbeSpec.options``).
    """
    raise NotImplementedError
