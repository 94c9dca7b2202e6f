"""The Probes page's quick runs: a probe and its baselines on the first N sentences of each dataset, not saved.

Before a run the tab shows ``probes.estimate``'s estimate (data, cache, a measured warm-up); the run reports its
progress in a bar and keeps its results for every session of the server (``_quick_runs``), and the page's
``probe_section`` (passed in, as to the upload tab) draws them as it draws saved results.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

from app_pages import state
from app_pages.common import log, model_select, safe
from app_pages.loaders import get_embedder
from app_pages.warmup import wait_warmup
from corpora.paths import DataMissingError
from models import DEFAULT_MODEL
from models.errors import ModelLoadError
from models.registry import get_spec, model_version
from probes.estimate import estimate_run
from probes.registry import ProbeSpec, all_probes, get_probe
from probes.results import ProbeResult, results_frame
from probes.run import run_probe
from viz.export import run_record_json

DEFAULT_LIMIT = 20


#: Quick runs a server keeps (the most recent): every distinct model, probe, size and options was kept for the
#: server's life, a dict that only grew on a server used all day (a helper's audit, round thirteen).
KEPT_RUNS = 64


@dataclass
class QuickRuns:
    """Quick-run results shared by every session of this server: key -> (results, wall seconds, the model's
    ``models.registry.model_version`` then), the ``KEPT_RUNS`` most recent; ``finished`` counts every run ended."""

    kept: OrderedDict = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: int = 0

    def put(self, key: tuple, done: tuple) -> None:
        with self.lock:
            self.kept[key] = done
            self.kept.move_to_end(key)
            while len(self.kept) > KEPT_RUNS:
                self.kept.popitem(last=False)
            self.finished += 1

    def get(self, key: tuple) -> tuple | None:
        with self.lock:
            return self.kept.get(key)


@st.cache_resource
def _quick_runs() -> QuickRuns:
    return QuickRuns()


@st.cache_data(show_spinner=False, max_entries=64, ttl=600)  # ttl: the command line may fill the cache too
def quick_estimate(probe: str, model: str, limit: int, options: tuple, runs_done: int) -> str | None:
    """The estimate of a quick run (``probes.estimate``: data, cache, a measured warm-up); recomputed when
    another quick run has finished (``runs_done``: it may have filled the feature cache). ``options``: the
    probe's quick options as (name, value) pairs."""
    emb = get_embedder(model)
    wait_warmup()
    est = estimate_run(get_probe(probe), emb, limit=limit, options=dict(options))
    return None if est is None else est.text()


def quick_run(probe: str, model: str, limit: int, options: dict, progress) -> list[ProbeResult]:
    """One probe and its baselines on a small slice (the first ``limit`` sentences of each dataset), not saved."""
    emb = get_embedder(model)
    wait_warmup()
    return run_probe(probe, emb, limit=limit, options=options, progress=progress, show_progress=False).results


def quick_options(spec: ProbeSpec, column) -> dict[str, int]:
    """The probe's quick-run options besides ``--limit`` (``ProbeSpec.quick``), one number input each, in the URL."""
    values = {}
    for opt in (o for o in spec.options if o.name in spec.quick):
        values[opt.name] = int(
            column.number_input(
                opt.help[:1].upper() + opt.help[1:],
                min_value=1,
                max_value=100_000,
                step=100,
                key=state.bind(f"probe_{opt.name}", spec.quick[opt.name], lo=1, hi=100_000, param=opt.name),
                help=f"--{opt.name.replace('_', '-')} on the command line. The quick-run default "
                f"({spec.quick[opt.name]}) is what lets the layers differ on a small test slice.",
            )
        )
    return values


def quick_tab(probe_section: Callable[..., None]) -> None:
    """The quick-run tab; ``probe_section`` draws a run's results (the Probes page's, as for saved ones)."""
    st.caption(
        "Runs a probe on the first N sentences of each dataset (like `--limit N` on the command line), "
        "so it finishes in seconds to a minute on a laptop CPU. Scores on such small slices are noisy and "
        "are not the paper's numbers: a slice of a few documents draws the layers' shape, and the paired "
        "tests say which of its differences it can show (often none). Extracted vectors are cached on disk, "
        "so a second run is much faster."
    )
    c1, c2, c3 = st.columns([2, 2, 1])
    titles = {spec.name: spec.title for spec in all_probes() if not spec.needs_files}  # tag/span: "Your data"
    probe = c1.selectbox(
        "Probe",
        list(titles),
        format_func=titles.get,
        key=state.bind("probe_kind", next(iter(titles)), list(titles), param="probe"),
    )
    with c2:
        model = model_select("Model", None, key="probe_model", default=DEFAULT_MODEL, param="model")
    fixed = "".join(f" (--{k.replace('_', '-')}: the box below, whatever N is)" for k in get_probe(probe).quick)
    limit = c3.number_input(
        "Sentences (--limit)",
        min_value=1,
        max_value=5000,
        step=10,
        key=state.bind("probe_limit", DEFAULT_LIMIT, lo=1, hi=5000, param="limit"),
        help=f"Per dataset{fixed}; the ⏱️ estimate below says what a run embeds and about how long it takes here. "
        "The full datasets are for the command line.",
    )
    options = quick_options(get_probe(probe), st.columns([2, 3])[0])
    if model is None:
        return
    runs = _quick_runs()
    run_key = (model, probe, int(limit), tuple(sorted(options.items())))
    blocked = False  # a missing dataset or a model that does not load stops the run as it stopped the estimate
    with safe(f"estimate the {probe.upper()} probe on {model}", kind="warning"):
        try:
            with st.spinner("Estimating (a short warm-up of the model)…"):
                estimate = quick_estimate(probe, model, int(limit), run_key[3], runs.finished)
        except (DataMissingError, ModelLoadError):
            blocked = True
            raise
        st.caption(f"⏱️ Estimate: {estimate}" if estimate else "⏱️ No estimate: this probe reads its data as it runs.")
    # then the warning says why, once: no button to press into a second error, no "press Run probe" beside it
    if st.button("Run probe", type="primary", key="probe_run", disabled=blocked):
        with safe(f"run the {probe.upper()} probe on {model}"):
            bar = st.progress(0.0, text=f"Starting {probe.upper()} on {model}…")
            last = [""]

            def progress(frac: float, msg: str = "") -> None:
                last[0] = msg or last[0]
                bar.progress(float(min(max(frac, 0.0), 1.0)), text=msg or f"{probe.upper()} on {model}")

            t0 = time.perf_counter()
            results = quick_run(probe, model, int(limit), options, progress)
            wall_s = round(time.perf_counter() - t0, 1)
            log.info("quick %s probe on %s (limit %s) took %.1f s", probe, model, limit, wall_s)
            runs.put(run_key, (results, wall_s, model_version(get_spec(model))))
            bar.progress(1.0, text=f"Done in {wall_s} s (last step: {last[0]})")
    done = runs.get(run_key)
    if done is not None and done[2] != model_version(get_spec(model)):
        done = None  # a run of another version of the model: re-registered, or its files replaced since
    if done is None:
        if not blocked:
            st.info("Choose a probe, a model and a size, then press **Run probe**.")
        return
    results, wall_s, _ = done
    spec = get_probe(probe)
    flags = "".join(f" --{name.replace('_', '-')} {value}" for name, value in options.items())
    st.success(
        f"{spec.short_title} on {model}, first {limit} sentences per dataset{f' ({flags.strip()})' if flags else ''}: "
        f"done in {wall_s} s."
    )
    for warning in dict.fromkeys(w for res in results if (w := res.extra.get("warning"))):  # e.g. GloVe missing
        st.warning(warning)
    for res in results if spec.summary is not None else []:  # what the command line prints after the rows
        if res.model == model and (lines := spec.summary(res)):
            st.caption("  \n".join(line.strip() for line in lines))
    command = f"python -m probes {probe} --model {model} --limit {int(limit)}{flags}"
    probe_section(
        spec,
        results_frame(results),
        "quick",
        records=run_record_json(results, command=command),
        results=lambda: results,
    )
