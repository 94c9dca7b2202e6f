"""The generic token-labelling probe: one linear probe per layer spec, trained on one split, scored on others.

The built-in POS probe (CoNLL-2000) and the ``tag`` probe on a user's files are this code on
different :class:`TokenSplit` s, so the two give the same number on the same data.

    train = TokenSplit("en_ewt-train", key, sentences, labels)
    rows, extra = run_layers(embedder, specs, ctx, train, [dev, test], scheme="tag")

Per layer spec: the layer's word vectors (``features.extract``; a "mean"/"mix:" spec summed one layer
at a time, in the order ``LayerSpec.combine`` sums them, so memory holds two layers, not all),
the selected rows (``TokenSplit.rows``: words whose label is scored), then :func:`fit_and_score`,
the one place where a probe is fitted and evaluated. Evaluation splits are scored together (their
rows concatenated) and split again, so a dev file costs no second fit.

Rows: "accuracy" per evaluation split (``probes.stats.intervals.accuracy_row``, per-token outcomes kept in
``extra["instances"]``; the interval resamples sentences, ``TokenSplit.units``), and for ``scheme="bio"``
also "F1", the conlleval span F1 (``probes.estimators.bio``).
With ``rigor`` (``probes.tasks.rigor_options``) the probe may be an MLP or rank-limited, and each layer also
gets control-task selectivity and MDL codelength rows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from features.extract import Features, get_features
from features.store import data_hash
from probes.estimators.bio import span_f1_row
from probes.estimators.classifier import reached_bound
from probes.estimators.majority import MajorityLabelBaseline
from probes.layers import LayerSpec, needed_layers
from probes.progress import ProgressFn
from probes.registry import RunContext
from probes.stats.intervals import accuracy_row, keep_instances
from probes.stats.units import SENTENCE, Units
from probes.tasks.rigor_options import RigorOptions, layer_rows, row_offsets

log = logging.getLogger(__name__)


@dataclass
class TokenSplit:
    """One split of a token-labelling dataset, as the probe sees it.

    name:      the ``dataset`` of its result rows ("conll2000-test", "en_ewt@1a2b3c4d:test:UPOS").
    key:       its feature-cache key (names the file's content and slice, never the label column).
    sentences: the words, exactly as the embedder sees them.
    labels:    one label per *scored* word, flat.
    rows:      the scored words' indices into the flat word list (None: every word).
    """

    name: str
    key: str
    sentences: list[list[str]]
    labels: np.ndarray
    rows: np.ndarray | None = None

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([len(s) for s in self.sentences])]).astype(np.int64)

    @property
    def words(self) -> list[str]:
        flat = [w for s in self.sentences for w in s]
        return flat if self.rows is None else [flat[i] for i in self.rows]

    def hash_parts(self) -> tuple[Sequence[Sequence[str]], ...]:
        """What the probe learns and is scored on: the sentences, the labels and the scored rows."""
        rows = [] if self.rows is None else [[str(i) for i in self.rows]]
        return self.sentences, [[str(label) for label in self.labels]], rows

    @property
    def units(self) -> Units:
        """The resampling unit of a token task: the sentence of each scored word."""
        per_word = np.repeat(np.arange(len(self.sentences), dtype=np.int64), [len(s) for s in self.sentences])
        return Units(SENTENCE, per_word if self.rows is None else per_word[self.rows])

    def by_sentence(self, flat: np.ndarray) -> list[np.ndarray]:
        """Per-sentence pieces of a flat array over every word (``rows`` None only)."""
        off = self.offsets
        return [flat[off[i] : off[i + 1]] for i in range(len(self.sentences))]


@dataclass
class LayerFit:
    """What one fit gives: predictions on the evaluation rows, which were right, the training history and the
    schedule it trained on."""

    predictions: np.ndarray
    correct: np.ndarray
    history: list[dict]
    schedule: str


def fit_and_score(
    Xtr: np.ndarray,
    ytr: np.ndarray,
    Xte: np.ndarray,
    yte: np.ndarray,
    *,
    seed: int = 0,
    device: str | None = None,
    rigor: RigorOptions | None = None,
    progress: ProgressFn | None = None,
) -> LayerFit:
    """Fit the probe on one layer's training vectors and predict the evaluation vectors.

    ``rigor``: the probe family (default: the linear probe); a control task, which needs the words, is
    ``rigor_options.layer_rows``'s.
    ``progress``: told each epoch (``LinearProbe.fit``).
    """
    probe = (rigor or RigorOptions()).new_probe(seed=seed, device=device).fit(Xtr, ytr, progress=progress)
    pred = probe.predict(Xte)
    return LayerFit(pred, pred == np.asarray(yte), probe.history_, probe.schedule)


def note_fit(extra: dict, what: str, layer: str, fit: LayerFit) -> None:
    """Record the fit's schedule (``extra["schedule"]``; absent in runs before 2026-12-07: the early stop), and log
    and list (``extra["epoch_bound_reached"]``) a layer whose plateau-schedule fit ran out of epochs."""
    extra["schedule"] = fit.schedule
    if reached_bound(fit.history):
        extra.setdefault("epoch_bound_reached", []).append(layer)
        log.warning(
            "%s layer %s: the probe ran its %d epochs before its learning rate decayed; it may be short of its "
            "optimum (see extra['history']).",
            what,
            layer,
            sum("epoch" in entry for entry in fit.history),
        )


def layer_matrix(feats: Features, spec: LayerSpec, num_layers: int, rows: np.ndarray | None = None) -> np.ndarray:
    """The spec's vectors for the selected rows: the stored layer, or Σ_j w_j·layer_j in float32."""
    if spec.is_single:
        X = feats.layer(spec.index)
    else:
        w = spec.weights(num_layers)
        X = None
        for j in range(num_layers):
            term = float(w[j]) * np.asarray(feats.layer(j), np.float32)
            X = term if X is None else X + term
    return X if rows is None else X[rows]


def extract(embedder, split: TokenSplit, needed: list[int], ctx: RunContext, lo: float, hi: float) -> Features:
    return get_features(
        embedder,
        split.key,
        split.sentences,
        needed,
        progress=ctx.sub_progress(lo, hi),
        show_progress=ctx.show_progress,
        root=ctx.feature_root,
    )


def split_rows(
    split: TokenSplit, layer: str, correct: np.ndarray, predictions: np.ndarray, scheme: str, extra: dict
) -> list[dict]:
    """The result rows of one evaluation split at one layer (and its kept per-token outcomes)."""
    units = split.units
    rows = [accuracy_row(split.name, layer, correct, units=units)]
    keep_instances(extra, split.name, layer, correct, units)
    if scheme == "bio":
        rows.append(span_f1_row(split.name, layer, split.by_sentence(split.labels), split.by_sentence(predictions)))
    return rows


def run_layers(
    embedder,
    specs: Sequence[LayerSpec],
    ctx: RunContext,
    train: TokenSplit,
    evals: Sequence[TokenSplit],
    *,
    scheme: str = "tag",
    what: str = "tag probe",
    rigor: RigorOptions | None = None,
) -> tuple[list[dict], dict]:
    """Result rows (every spec × evaluation split) and ``extra`` (counts, timings, histories, outcomes).

    ``rigor``: probe family, control task and MDL (``probes.tasks.rigor_options``; default: none of them)."""
    t0 = time.perf_counter()
    if rigor is not None:
        rigor.check_data(train.labels, train.words)  # before any extraction
    L = embedder.num_layers
    needed = needed_layers(specs, L)
    ftr = extract(embedder, train, needed, ctx, 0.0, 0.6)
    fevs = [
        extract(embedder, s, needed, ctx, 0.6 + 0.15 * i / len(evals), 0.6 + 0.15 * (i + 1) / len(evals))
        for i, s in enumerate(evals)
    ]
    t_feat = time.perf_counter() - t0
    y_te = np.concatenate([s.labels for s in evals])
    words_tr, words_te = train.words, [w for s in evals for w in s.words]
    bounds = np.cumsum([0] + [len(s.labels) for s in evals])
    rows: list[dict] = []
    extra: dict = {}
    history = {}
    fit_s: dict[str, float] = {}  # per spec: the probe's own fit + predict (the rigor rows time themselves)
    for k, spec in enumerate(specs):
        Xtr = layer_matrix(ftr, spec, L, train.rows)
        Xte = (
            np.concatenate([layer_matrix(f, spec, L, s.rows) for f, s in zip(fevs, evals)])
            if len(evals) > 1
            else layer_matrix(fevs[0], spec, L, evals[0].rows)
        )
        lo, hi = 0.75 + 0.25 * k / len(specs), 0.75 + 0.25 * (k + 1) / len(specs)
        more_rows = rigor is not None and (rigor.control or rigor.mdl)
        mid = lo + (hi - lo) / 3 if more_rows else hi  # the control task and MDL fit more probes
        t_fit = time.perf_counter()
        told = ctx.sub_progress(lo, mid, f"{what} layer {spec.label}: ")
        fit = fit_and_score(Xtr, train.labels, Xte, y_te, seed=ctx.seed, device=ctx.device, rigor=rigor, progress=told)
        fit_s[spec.label] = round(time.perf_counter() - t_fit, 1)
        for i, s in enumerate(evals):
            part = slice(bounds[i], bounds[i + 1])
            rows += split_rows(s, spec.label, fit.correct[part], fit.predictions[part], scheme, extra)
        history[spec.label] = fit.history
        note_fit(extra, what, spec.label, fit)
        if more_rows:
            more, details = layer_rows(
                rigor,
                spec.label,
                Xtr,
                train.labels,
                words_tr,
                row_offsets(train.offsets, train.rows),
                train.name,
                Xte,
                words_te,
                fit.correct,
                [(s.name, slice(bounds[i], bounds[i + 1]), s.units) for i, s in enumerate(evals)],
                seed=ctx.seed,
                device=ctx.device,
                show_progress=ctx.show_progress,
                progress=ctx.sub_progress(mid, hi),
            )
            rows += more
            extra.setdefault("rigor", {})[spec.label] = details
        if ctx.progress is not None:
            ctx.progress(hi, f"{what} layer {spec.label}: {100 * fit.correct[bounds[-2] :].mean():.1f}%")
    extra.update(
        {
            "train_tokens": len(train.labels),
            "test_tokens": len(evals[-1].labels),
            "data_hash": splits_hash(train, *evals),
            "feature_s": round(t_feat, 1),
            "fit_s": fit_s,
            "total_s": round(time.perf_counter() - t0, 1),
            "history": history,
        }
    )
    return rows, extra


def splits_hash(*splits: TokenSplit) -> str:
    """The data hash of a run on these splits (``features.store.data_hash``)."""
    return data_hash(*(part for s in splits for part in s.hash_parts()))


def baseline_rows(train: TokenSplit, evals: Sequence[TokenSplit], scheme: str = "tag") -> tuple[list[dict], dict]:
    """The majority-label-per-word baseline's rows (layer "baseline") on every evaluation split."""
    base = MajorityLabelBaseline().fit(train.words, list(train.labels))
    rows: list[dict] = []
    extra: dict = {}
    for s in evals:
        pred = base.predict(s.words)
        rows += split_rows(s, "baseline", pred == s.labels, pred, scheme, extra)
    extra["data_hash"] = splits_hash(train, *evals)
    return rows, extra
