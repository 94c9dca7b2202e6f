"""What a probe run will embed and about how long it will take, said before it starts.

    est = estimate_run(get_probe("pos"), load_embedder("minilm"))
    est.text()  # on the 2-core CPU, shared with other jobs (load average 6-8), 2026-11-26:
    # 'minilm: 10,948 sentences, 259,104 words in 2 datasets, not cached: ~49 min extraction + ~27 min
    #  training (up to 8 fits × 10 epochs), measured on this machine (warm-up: 88 words/s)'
    # (the early stop of that day; the plateau schedule's text reads "8 fits × about 50 epochs")

The command line prints it before every probe run (``probes.cli``, through ``run_probe(before=…)``, so
only once every check has passed); the app's quick probe shows it before "Run".

- **Data**: ``ProbeSpec.embeds(limit, options)``: each dataset's feature-cache key and sentences, known
  before the run (None, or no ``embeds``: not known, no estimate).
- **Cache**: ``features.entries.has_layers`` with every layer of the model (an extraction writes them
  all); a dataset with no key (CKA) is embedded on every run.
- **Extraction time**: a short measured warm-up: one untimed sentence (whatever a model builds lazily),
  then one batch of ``WARMUP_SENTENCES`` sentences of about the median length of the first dataset not
  cached, timed: words per second, applied to every word not cached. The real extraction batches 512
  sentences of similar length, so it is usually somewhat faster than said (MiniLM on 2 cores: the
  warm-up's rate was 0.8× the real one). A machine shared with other work makes both slower.
- **Training time**: for the token probes (those with the probe-family option ``probe``: one classifier
  per layer spec), the probe family's cost per fit and per row and epoch, measured on ``WARMUP_ROWS``
  random vectors of the model's width (``training_costs``), scaled to the training words ×
  ``EXPECTED_EPOCHS`` of each fit's schedule (what full-data fits took; MDL's block probes keep the early
  stop's 10; the text gives the mean epochs per fit) × fits: the layer specs
  (``fits_per_layer``: + K with ``--control`` and K label draws, + 2 × the data orders with ``--mdl``: a task and a
  control code per order, whose blocks add up to about one fit each). Other probes' own passes (WSD's centroids,
  the λ ablation) are not estimated; the text says so.

Nothing is written, and no result changes: the warm-up's vectors are discarded and ``run_probe`` seeds
every generator after it.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpora.paths import cache_dir
from features import DISK_SHARE, gb
from features.background import duration
from features.entries import has_layers
from probes.estimators.classifier import EARLY_STOP, PLATEAU, SCHEDULE_DEFAULTS
from probes.estimators.mdl import PROBE_SCHEDULE
from probes.layers import parse_layer_specs
from probes.registry import ProbeSpec
from probes.tasks.rigor_options import RigorOptions

WARMUP_SENTENCES = 16
WARMUP_ROWS = 4096
#: Epochs a fit takes, by schedule: the early stop's bound (it often ends sooner); the plateau schedule's decay ended
#: the committed full-data CoNLL-2000 fits after 35–62 epochs (2026-12-07), far under its bound of 200.
EXPECTED_EPOCHS = {PLATEAU: 50, EARLY_STOP: SCHEDULE_DEFAULTS[EARLY_STOP][0]}


@dataclass(frozen=True)
class Estimate:
    """What a run embeds and how long it should take (seconds; None: not estimated).

    words_to_embed: the words of the datasets the cache does not hold; words_per_s: the warm-up's rate.
    fits: classifier fits of the training words (layer specs × ``fits_per_layer``); train_s: their time, up to.
    """

    model: str
    probe: str
    sentences: int
    words: int
    datasets: int
    cached_datasets: int
    words_to_embed: int
    words_per_s: float | None
    extract_s: float | None
    fits: int
    epochs: int
    train_s: float | None
    # float16 rows of every layer for the words to embed and cache (an upper bound: some keep fewer)
    feature_bytes: int = 0
    free_bytes: int | None = None  # free on the cache's disk

    @property
    def total_s(self) -> float:
        return (self.extract_s or 0.0) + (self.train_s or 0.0)

    def text(self) -> str:
        """One line: "minilm: 11,005 sentences, 306,142 words in 2 datasets, not cached: ~8 min extraction + …"."""
        if self.cached_datasets == self.datasets:
            cache, extract = "all cached", "no extraction"
        else:
            cache = "not cached" if self.cached_datasets == 0 else f"{self.cached_datasets} cached"
            extract = f"~{duration(self.extract_s)} extraction"
            if self.feature_bytes:  # a dataset without a cache key (CKA, attention) is embedded and not kept
                extract += f" writing up to {gb(self.feature_bytes)}"
            if self.free_bytes is not None and self.feature_bytes > self.free_bytes * DISK_SHARE:
                extract += f" (more than the {gb(self.free_bytes)} free: only the layers asked for are kept)"
        fits = f"{self.fits} fit{'s' * (self.fits != 1)}"
        train = (
            f" + ~{duration(self.train_s)} training ({fits} × about {self.epochs} epochs)"
            if self.train_s is not None
            else f" (and the {self.probe} probe's own passes, not estimated)"
        )
        rate = f" (warm-up: {self.words_per_s:,.0f} words/s)" if self.words_per_s else ""
        return (
            f"{self.model}: {self.sentences:,} sentences, {self.words:,} words in {self.datasets} "
            f"dataset{'s' * (self.datasets != 1)}, {cache}: {extract}{train}, measured on this machine{rate}"
        )


def free_space(root: Path | None) -> int | None:
    """Free bytes on the disk of the feature cache (None: it cannot be read)."""
    try:
        return shutil.disk_usage(root or cache_dir()).free
    except OSError:
        return None


def words_per_second(embedder, sentences: list[list[str]]) -> float:
    """Words per second of ``embedder`` on ``WARMUP_SENTENCES`` sentences of about the median length (after one
    untimed): one batch of similar lengths, as the extraction batches them (sorted by length, little padding)."""
    by_length = sorted((s for s in sentences if s), key=len)
    mid = max(0, len(by_length) // 2 - WARMUP_SENTENCES // 2)
    sample = by_length[mid : mid + WARMUP_SENTENCES]
    if not sample:
        return float("inf")
    embedder.embed(sample[:1])
    t0 = time.perf_counter()
    embedder.embed(sample)
    return sum(map(len, sample)) / max(time.perf_counter() - t0, 1e-6)


def training_costs(options: dict, dim: int, device: str | None) -> tuple[float, float]:
    """(seconds of a fit whatever its size, seconds per training row and epoch) of the probe family
    (``RigorOptions``), measured: one small untimed fit (torch's first-use costs), then fits of one and of
    two epochs on ``WARMUP_ROWS`` random rows of width ``dim``; their difference is one epoch. The L-BFGS polish of a
    small fit (``probes.estimators.polish``: at most 50,000 training rows, up to 2.6× such a fit's seconds in
    ``bench/bench_polish.py``) is not counted."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((WARMUP_ROWS, dim)).astype(np.float32)
    y = rng.integers(0, 40, WARMUP_ROWS)

    def fit(rows: int, epochs: int) -> float:
        # the epochs alone: a polish of these random labels would charge its rejected round to every fit
        probe = RigorOptions.from_options(options).new_probe(seed=0, device=device, epochs=epochs, polish=False)
        t0 = time.perf_counter()
        probe.fit(X[:rows], y[:rows])
        return time.perf_counter() - t0

    fit(256, 1)
    one, two = fit(WARMUP_ROWS, 1), fit(WARMUP_ROWS, 2)
    epoch = max(two - one, 1e-9)
    return max(one - epoch, 0.0), epoch / WARMUP_ROWS


def fits_per_layer(rigor: RigorOptions) -> tuple[int, int]:
    """Classifier fits a token probe makes per layer spec, and their epochs in all: the task's fit and one per
    control-label draw (``--control``) on the family's schedule, and with ``--mdl`` one per data order of each of
    its two online codes, the task's and the control task's (a code's blocks add up to about one fit), on MDL's."""
    own = 1 + rigor.control * rigor.control_draws
    mdl = 2 * rigor.mdl * rigor.mdl_orders
    return own + mdl, own * EXPECTED_EPOCHS[rigor.family.schedule] + mdl * EXPECTED_EPOCHS[PROBE_SCHEDULE]


def estimate_run(
    spec: ProbeSpec,
    embedder,
    *,
    layers: str | None = "all",
    limit: int | None = None,
    options: dict | None = None,
    device: str | None = None,
    feature_root=None,
) -> Estimate | None:
    """The estimate of ``run_probe(spec, embedder, layers=…, limit=…, options=…)``; None when the probe does
    not know its data before it runs. ``options``: the runner's (``spec.options_from``)."""
    options = spec.options_from(options or {})
    data = spec.embeds(limit, options) if spec.embeds is not None else None
    if data is None:
        return None
    everything = range(embedder.num_layers)
    cached = [
        key is not None and has_layers(embedder, key, everything, feature_root, sentences=sentences)
        for key, sentences in data
    ]
    todo = [sentences for (_, sentences), hit in zip(data, cached) if not hit]
    to_embed = sum(len(s) for sentences in todo for s in sentences)
    to_keep = sum(
        len(s) for (key, sentences), hit in zip(data, cached) if key is not None and not hit for s in sentences
    )
    rate = words_per_second(embedder, todo[0]) if todo else None
    fits, epochs, train_s = 0, 0, None
    if any(o.name == "probe" for o in spec.options):  # a token probe: one classifier per layer spec
        specs = parse_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids) if spec.uses_layers else []
        layer_specs = max(len(specs), 1)
        per_layer, epochs_per_layer = fits_per_layer(RigorOptions.from_options(options))
        fits, epochs = layer_specs * per_layer, round(epochs_per_layer / per_layer)
        rows = sum(len(s) for s in data[0][1])
        fixed, per_row_epoch = training_costs(options, embedder.dim, device)
        train_s = layer_specs * (per_layer * fixed + per_row_epoch * rows * epochs_per_layer)
    return Estimate(
        model=embedder.name,
        probe=spec.name,
        sentences=sum(len(sentences) for _, sentences in data),
        words=sum(len(s) for _, sentences in data for s in sentences),
        datasets=len(data),
        cached_datasets=sum(cached),
        words_to_embed=to_embed,
        words_per_s=rate,
        extract_s=None if rate is None else to_embed / rate,
        feature_bytes=to_keep * embedder.num_layers * embedder.dim * 2,
        free_bytes=free_space(feature_root),
        fits=fits,
        epochs=epochs,
        train_s=train_s,
    )
