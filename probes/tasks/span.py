"""``span``: edge probing (Tenney et al., 2019) — a linear probe per layer on span and span-pair labels.

    python -m probes span --model minilm --train train.jsonl --test test.jsonl [--pooling endpoints]

A span's vector is pooled from its words' vectors at one layer spec: ``mean`` (the average over
[start, end)) or ``endpoints`` (the first and last word's vectors concatenated, as in Lee et al.
2017's span representation without the attention term). A span pair is span1's vector followed by
span2's. Tenney et al. train a learned self-attention pooling and an MLP; this probe keeps the
lab's linear probe so that the layers, not the probe's capacity, differ.

Per layer spec: accuracy on each evaluation file (``probes.stats.intervals``); the baseline is the
majority label of each span's text (span1 text ‖ span2 text; unseen: the overall majority label).
Files: ``corpora.edge_probing``.
"""

from __future__ import annotations

import time

import numpy as np

from corpora.edge_probing import iter_edge_probing
from corpora.labelled import SpanSentence
from features.extract import Features, get_features
from probes.errors import ProbeInputError
from probes.estimators.majority import MajorityLabelBaseline
from probes.inputs import Preview
from probes.layers import LayerSpec, as_layer_specs, needed_layers
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext
from probes.reporting.tables import dataset_tables
from probes.result_names import SPAN_POOLINGS, span_task
from probes.results import ProbeResult
from probes.stats.intervals import accuracy_row, keep_instances
from probes.stats.units import SENTENCE, Units
from probes.tasks.datafiles import DataFiles, check_labels_seen, file_inputs, file_options, label_counts, read_roles
from probes.tasks.preview import span_preview
from probes.tasks.token_labels import fit_and_score, layer_matrix, note_fit

MAJORITY = "majority-label"
POOLINGS = SPAN_POOLINGS
FILE_FORMATS = ("edge-probing JSON lines",)


def span_text(words, t) -> str:
    text = " ".join(words[t.span1[0] : t.span1[1]])
    return text if t.span2 is None else text + " ‖ " + " ".join(words[t.span2[0] : t.span2[1]])


class SpanSplit:
    """One file's sentences and targets, with each target's global word offsets."""

    def __init__(
        self, files: DataFiles, role: str, sents: list[SpanSentence], limit: int | None, task: str = "span"
    ) -> None:
        self.name = files.row_dataset(role, task)
        self.key = files.feature_key(role, files.limited)  # a limit that cut nothing: the full run's entry
        self.sentences = [list(s.words) for s in sents]
        off = np.concatenate([[0], np.cumsum([len(s.words) for s in sents])]).astype(np.int64)
        targets = [(off[i], t) for i, s in enumerate(sents) for t in s.targets]
        if not targets:
            raise ProbeInputError(f"--{role} {files.paths()[role]}: no targets in the first {limit} records.")
        self.span1 = np.array([(o + t.span1[0], o + t.span1[1]) for o, t in targets], dtype=np.int64)
        self.span2 = (
            None
            if targets[0][1].span2 is None
            else np.array([(o + t.span2[0], o + t.span2[1]) for o, t in targets], dtype=np.int64)
        )
        self.labels = np.array([t.label for _, t in targets])
        self.units = Units.from_sizes(SENTENCE, [len(s.targets) for s in sents])  # targets of one sentence
        self.texts = [span_text(s.words, t) for s in sents for t in s.targets]


def pool(X: np.ndarray, spans: np.ndarray, pooling: str) -> np.ndarray:
    """(targets, d) mean of X[start:end], or (targets, 2d) [X[start]; X[end-1]]."""
    if pooling == "endpoints":
        return np.concatenate([np.asarray(X[spans[:, 0]], np.float32), np.asarray(X[spans[:, 1] - 1], np.float32)], 1)
    csum = np.concatenate([np.zeros((1, X.shape[1]), np.float64), np.cumsum(np.asarray(X, np.float64), 0)])
    return ((csum[spans[:, 1]] - csum[spans[:, 0]]) / (spans[:, 1] - spans[:, 0])[:, None]).astype(np.float32)


def span_vectors(feats: Features, spec: LayerSpec, split: SpanSplit, num_layers: int, pooling: str) -> np.ndarray:
    X = layer_matrix(feats, spec, num_layers)
    parts = [pool(X, split.span1, pooling)] + ([] if split.span2 is None else [pool(X, split.span2, pooling)])
    return np.concatenate(parts, 1) if len(parts) > 1 else parts[0]


def load_splits(
    limit: int | None, train=None, test=None, dev=None, name=None, pooling="mean", **_ignored
) -> tuple[DataFiles, SpanSplit, list[SpanSplit]]:
    if pooling not in POOLINGS:
        raise ProbeInputError(f"--pooling {pooling!r}: choose mean or endpoints.")
    files = DataFiles.checked("span", train, test, dev, name, settings="edge-probing")
    files, data = read_roles(files, iter_edge_probing, limit)
    firsts = {role: next((t for s in sents for t in s.targets), None) for role, sents in data.items()}
    kinds = {role: t.span2 is not None for role, t in firsts.items() if t is not None}  # a file's first target
    if len(set(kinds.values())) > 1:
        raise ProbeInputError(
            "The files mix single spans and span pairs: "
            + ", ".join(f"--{r} {'pairs' if k else 'single spans'}" for r, k in kinds.items())
            + "."
        )
    # another pooling is another task: its rows (and its baseline's) never replace the default pooling's
    task = span_task(pooling)
    splits = {role: SpanSplit(files, role, sents, limit, task) for role, sents in data.items()}
    check_labels_seen(files, splits["train"].labels, {r: s.labels for r, s in splits.items() if r != "train"})
    return files, splits.pop("train"), list(splits.values())


def span_embeds(limit: int | None, options: dict) -> Embeds:
    """What a run embeds (``ProbeSpec.embeds``): the training file, then the evaluation files."""
    _, train, evals = load_splits(limit, **{**options, "pooling": options.get("pooling") or POOLINGS[0]})
    return [(s.key, s.sentences) for s in (train, *evals)]


def preview_files(limit: int, options: dict) -> Preview:
    """The app's preview: the files read as ``run_span`` reads them."""
    files, train, evals = load_splits(limit, **options)
    kind = "span pairs" if train.span2 is not None else "single spans"
    return Preview(files.label, f"{kind}, first {limit} records (JSON lines) of each file", *span_preview(train, evals))


def _params(files: DataFiles, ctx: RunContext, options: dict) -> dict:
    return {
        "pooling": options.get("pooling") or "mean",
        "name": options.get("name"),
        **{role: str(p) for role, p in files.paths().items()},
        "limit": files.limited,  # None where the limit cut nothing: the full run
        "seed": ctx.seed,
    }


def run_span(
    embedder, layers: str | list[LayerSpec] | None = None, ctx: RunContext = RunContext(), **options
) -> ProbeResult:
    """Linear probe on pooled span (pair) vectors at every requested layer spec."""
    pooling = options.get("pooling") or "mean"
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    files, train, evals = load_splits(ctx.limit, **{**options, "pooling": pooling})
    t0 = time.perf_counter()
    L = embedder.num_layers
    needed = needed_layers(specs, L)
    parts = 1 + len(evals)
    feats = [
        get_features(
            embedder,
            s.key,
            s.sentences,
            needed,
            progress=ctx.sub_progress(0.7 * i / parts, 0.7 * (i + 1) / parts),
            show_progress=ctx.show_progress,
            root=ctx.feature_root,
        )
        for i, s in enumerate([train, *evals])
    ]
    y_te = np.concatenate([s.labels for s in evals])
    bounds = np.cumsum([0] + [len(s.labels) for s in evals])
    rows, extra, history = [], {}, {}
    for k, spec in enumerate(specs):
        Xtr = span_vectors(feats[0], spec, train, L, pooling)
        Xte = np.concatenate([span_vectors(f, spec, s, L, pooling) for f, s in zip(feats[1:], evals)])
        fit = fit_and_score(Xtr, train.labels, Xte, y_te, seed=ctx.seed, device=ctx.device)
        for i, s in enumerate(evals):
            correct = fit.correct[bounds[i] : bounds[i + 1]]
            rows.append(accuracy_row(s.name, spec.label, correct, units=s.units))
            keep_instances(extra, s.name, spec.label, correct, s.units)
        history[spec.label] = fit.history
        note_fit(extra, "span probe", spec.label, fit)
        if ctx.progress is not None:
            ctx.progress(0.7 + 0.3 * (k + 1) / len(specs), f"span probe layer {spec.label}")
    extra.update(
        {
            "train_targets": len(train.labels),
            "test_targets": len(evals[-1].labels),
            "history": history,
            **label_counts(train.labels.tolist(), evals[-1].labels.tolist()),
            "pairs": train.span2 is not None,
            "total_s": round(time.perf_counter() - t0, 1),
        }
    )
    return ProbeResult(
        embedder.name,
        "span",
        rows,
        dataset=files.label,
        fingerprint=embedder.fingerprint(),
        params={**_params(files, ctx, options), "layers": [s.label for s in specs]},
        extra=extra,
    )


def span_baselines(ctx: RunContext, **options) -> list[ProbeResult]:
    files, train, evals = load_splits(ctx.limit, **{**options, "pooling": options.get("pooling") or "mean"})
    base = MajorityLabelBaseline().fit(train.texts, list(train.labels))
    rows, extra = [], {}
    for s in evals:
        correct = base.predict(s.texts) == s.labels
        rows.append(accuracy_row(s.name, "baseline", correct, units=s.units))
        keep_instances(extra, s.name, "baseline", correct, s.units)
    return [ProbeResult(MAJORITY, "span", rows, dataset=files.label, params=_params(files, ctx, options), extra=extra)]


PROBE = ProbeSpec(
    name="span",
    title="Span — edge probing on your files",
    description="linear probe per layer on span / span-pair labels (edge-probing JSON lines)",
    run=run_span,
    baselines=span_baselines,
    tables=lambda df, extras: dataset_tables(df, "span"),
    table_titles={},
    chart=ChartSpec(metrics=("accuracy",)),
    options=file_options(FILE_FORMATS)
    + (
        Option(
            "pooling",
            default="mean",
            help="span vector: mean of its words, or endpoints (first ‖ last)",
            choices=POOLINGS,
        ),
    ),
    baseline_models={MAJORITY: "majority label per span text"},
    needs_files=True,
    embeds=span_embeds,
    inputs=file_inputs(FILE_FORMATS),
    preview=preview_files,
)
