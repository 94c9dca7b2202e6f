"""The scalar-mix λ ablation of Peters et al. (2018, Table 2) on CoNLL-2000 POS tagging and chunking.

Rows, as in the paper: *baseline* (static GloVe 6B 50d input only), *last layer only* (GloVe +
the model's top layer), *all layers λ=1* and *all layers λ=0.001* (GloVe + the learned mix).
Like the paper, the contextual vectors are *added* to the baseline's input; the task model is
``probes.estimators.mix_tagger.MixTagger``. The ±1 window gives even the static baseline a little context; it
is the same for every row. The baseline row does not depend on the probed model, so it is this
probe's baseline result (model ``glove-6b-50d``), run once per reproduction.

Without GloVe (pip package missing, or any load error) no row can be the paper's: the baseline row is
*marked missing* (``value`` None, the reason in ``missing``) and the model's rows run on its vectors alone,
labelled ``"<row> (no GloVe input)"`` (``NO_GLOVE_ROWS``; ``params["glove_input"]`` False): other layer labels,
so never replacing nor compared with GloVe + model rows (``probes.results.KEY``). Both results carry one
``extra["warning"]``, which the command line prints once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from features.extract import get_features
from features.store import data_hash
from models.base import Embedder
from models.errors import ModelLoadError
from models.registry import load_embedder
from probes.errors import ProbeInputError, check_positive
from probes.estimators.bio import chunk_counts_f1, sentence_counts
from probes.estimators.mix_tagger import MixProbe, TokenData, chunk_f1, standardise_layers
from probes.registry import ChartSpec, Option, ProbeSpec, RunContext
from probes.results import ProbeResult
from probes.stats.intervals import accuracy_interval, grouped_interval, keep_instances
from probes.stats.units import SENTENCE, Units
from probes.tasks.conll import DATASET, conll_slice, feature_key
from probes.tasks.mix_tables import (
    BASELINE_MODEL,
    METRICS,
    MODEL_ROWS,
    NO_GLOVE,
    NO_GLOVE_ROWS,
    ROW_LAMBDA,
    ROWS,
    TASKS,
    mix_tables,
)
from probes.tasks.pos import conll_embeds


def _labels(sents, task: str) -> np.ndarray:
    return np.array([t for s in sents for t in (s.pos if task == "pos" else s.chunks)])


def _score(
    task: str,
    gold: np.ndarray,
    pred: np.ndarray,
    offsets: np.ndarray,
    *,
    seed: int = 0,
    extra: dict | None = None,
    dataset: str = "",
    layer: str = "",
) -> tuple[str, float, tuple[float, float]]:
    """Metric, value and its bootstrap 95% interval over sentences: POS accuracy (per-token outcomes kept in
    ``extra`` for paired tests) or conlleval chunk F1."""
    if task == "pos":
        correct = gold == pred
        units = Units.from_sizes(SENTENCE, np.diff(offsets))
        if extra is not None:
            keep_instances(extra, dataset, layer, correct, units)
        return "accuracy", 100.0 * float(correct.mean()), accuracy_interval(correct, units=units, seed=seed)
    split = lambda a: [list(a[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]
    counts = sentence_counts(split(gold), split(pred))
    return "chunk_F1", chunk_f1(split(gold), split(pred)), grouped_interval(counts, chunk_counts_f1, seed=seed)


def _known(values: tuple[str, ...], allowed: Sequence[str], what: str) -> tuple[str, ...]:
    """``values``, or ProbeInputError (at option parsing: before any extraction) naming the unknown ones."""
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ProbeInputError(f"Unknown {what}(s) {bad}; choose from {', '.join(allowed)}.")
    return values


def _parse_rows(text: str | Sequence[str]) -> tuple[str, ...]:
    """ "all" (the model's rows), or rows separated by ';'."""
    if not isinstance(text, str):
        return _known(tuple(text), ROWS, "row")
    rows = MODEL_ROWS if text == "all" else tuple(r.strip() for r in text.split(";") if r.strip())
    return _known(rows, ROWS, "row")


def _parse_tasks(text: str | Sequence[str]) -> tuple[str, ...]:
    tasks = tuple(t.strip() for t in text.split(",") if t.strip()) if isinstance(text, str) else tuple(text)
    return _known(tasks, TASKS, "task")


def _glove(embedder: Embedder | None = None) -> tuple[Embedder | None, str | None]:
    """GloVe 6B 50d (every row's static input) and None, or None and why it cannot be loaded."""
    if embedder is not None and embedder.name == BASELINE_MODEL:
        return embedder, None
    try:
        return load_embedder(BASELINE_MODEL), None
    except ModelLoadError as exc:
        return None, str(exc)


def _warning(reason: str) -> str:
    """The one warning of a run without GloVe (the same in every result of the run: printed once)."""
    return (
        f"{reason} The λ ablation's baseline row (GloVe alone) is marked missing; the model's rows run on its "
        f"own vectors without GloVe input, labelled '<row>{NO_GLOVE}': not the paper's rows."
    )


def _missing_rows(tasks: Sequence[str], reason: str) -> list[dict]:
    """The baseline row of each task, marked missing: no number, and why."""
    return [
        {"dataset": f"conll2000-test:{t}", "layer": "baseline", "metric": METRICS[t], "value": None, "missing": reason}
        for t in tasks
    ]


def _missing_baseline(ctx: RunContext, tasks, epochs, train_limit, reason: str) -> ProbeResult:
    """The baseline result without GloVe: its rows marked missing (``extra["missing"]``: why, and how to get it)."""
    params = {"rows": ["baseline"], "tasks": list(tasks), "limit": ctx.limit, "train_limit": train_limit}
    params |= {"seed": ctx.seed, "epochs": epochs}
    extra = {"missing": reason, "warning": _warning(reason)}
    return ProbeResult(BASELINE_MODEL, "mix", _missing_rows(tasks, reason), DATASET, params=params, extra=extra)


@dataclass(frozen=True)
class _MixInputs:
    """What every row of a λ-ablation run reads: GloVe's vectors (static, None without GloVe), the contextual
    model's standardised layers (``"all"``, ``"last"``; none for the baseline alone), the sentence offsets."""

    static_tr: torch.Tensor | None
    static_te: torch.Tensor | None
    layers: dict[str, tuple]
    tr_offsets: np.ndarray
    te_offsets: np.ndarray
    n_rows: int
    test_words: int

    def train_data(self, row: str, y: np.ndarray) -> TokenData:
        c_tr = None if row == "baseline" else self.layers["last" if row == "last" else "all"][0]
        return TokenData(c_tr, self.static_tr, self.tr_offsets, y)

    def test_data(self, row: str, y: np.ndarray) -> TokenData:
        c_te = None if row == "baseline" else self.layers["last" if row == "last" else "all"][1]
        return TokenData(c_te, self.static_te, self.te_offsets, y)


def _mix_inputs(embedder, glove, needs_ctx: bool, ctx: RunContext, w_tr, w_te, n_tr: int) -> _MixInputs:
    """The features of CoNLL-2000 train (its first ``n_tr`` sentences) and test under GloVe and the model,
    from the feature cache (extraction: the first 20 % of the progress)."""
    limit = ctx.limit

    def features(model, split: str, words, lo: float, hi: float):
        return get_features(
            model,
            feature_key(split, limit),
            words,
            progress=ctx.sub_progress(lo, hi),
            show_progress=ctx.show_progress,
            root=ctx.feature_root,
        )

    g_tr = g_te = f_tr = f_te = None
    if glove is not None:
        g_tr, g_te = features(glove, "train", w_tr, 0.0, 0.02), features(glove, "test", w_te, 0.02, 0.03)
    if needs_ctx:
        f_tr, f_te = features(embedder, "train", w_tr, 0.03, 0.16), features(embedder, "test", w_te, 0.16, 0.2)
    s_tr, s_te = (g_tr, g_te) if glove is not None else (f_tr, f_te)  # sentence offsets: the same words
    tr_offsets = s_tr.offsets[: n_tr + 1]
    n_rows = int(tr_offsets[-1])
    static_tr = static_te = None
    if glove is not None:
        static_tr = torch.from_numpy(np.asarray(g_tr.layer(0)[:n_rows], np.float32))
        static_te = torch.from_numpy(np.asarray(g_te.layer(0), np.float32))
    layers = {}
    if needs_ctx:
        L = embedder.num_layers
        all_tr, all_te = standardise_layers(
            [f_tr.layer(j)[:n_rows] for j in range(L)], [f_te.layer(j) for j in range(L)]
        )
        layers = {"all": (all_tr, all_te), "last": (all_tr[-1:], all_te[-1:])}
    return _MixInputs(static_tr, static_te, layers, tr_offsets, s_te.offsets, n_rows, int(s_te.num_words))


def _fit_row(inputs: _MixInputs, row: str, y_tr: np.ndarray, epochs: int, ctx: RunContext) -> MixProbe:
    """The row's tagger (its λ: ``ROW_LAMBDA``), trained on the train split."""
    lam = ROW_LAMBDA.get(row, 0.0)
    return MixProbe(lam=lam, epochs=epochs, seed=ctx.seed, device=ctx.device).fit(inputs.train_data(row, y_tr))


def run_mix(
    embedder,
    layers=None,
    ctx: RunContext = RunContext(),
    rows: Sequence[str] = MODEL_ROWS,
    tasks: Sequence[str] = TASKS,
    epochs: int = 10,
    train_limit: int | None = None,
) -> ProbeResult:
    """The λ ablation rows ``rows`` for one model (the "baseline" row uses GloVe alone).

    ``train_limit`` trains on the first N training sentences only, slicing the cached features of
    the full split (no new extraction); the test split stays complete. ``layers`` is unused: the
    rows choose their layers. ``extra["mix"][task][row]`` holds the learned s and γ.
    """
    rows, tasks = _parse_rows(rows), _parse_tasks(tasks)
    check_positive(train_limit, "--train-limit")
    needs_ctx = [r for r in rows if r != "baseline"]
    if needs_ctx and embedder.num_layers < 2:
        raise ProbeInputError(
            f"{embedder.name} has a single layer: the λ ablation needs a contextual model (rows {needs_ctx})."
        )
    t0 = time.perf_counter()
    limit = ctx.limit
    train, test = conll_slice("train", limit), conll_slice("test", limit)
    w_tr, w_te = [list(s.words) for s in train], [list(s.words) for s in test]
    glove, missing = _glove(embedder)
    if glove is None and not needs_ctx:
        return _missing_baseline(ctx, tasks, epochs, train_limit, missing)

    n_tr = len(train) if train_limit is None else min(train_limit, len(train))
    inputs = _mix_inputs(embedder, glove, needs_ctx, ctx, w_tr, w_te, n_tr)
    train = train[:n_tr]
    t_feat = time.perf_counter() - t0
    out_rows, mixes, kept, k = [], {}, {}, 0
    for task in tasks:
        y_tr, y_te = _labels(train, task), _labels(test, task)
        for row in rows:
            k += 1
            if glove is None and row == "baseline":
                out_rows += _missing_rows((task,), missing)
                continue
            label = row if glove is not None else row + NO_GLOVE
            probe = _fit_row(inputs, row, y_tr, epochs, ctx)
            dataset = f"conll2000-test:{task}"
            d_te = inputs.test_data(row, y_te)
            metric, value, (lo, hi) = _score(
                task, y_te, probe.predict(d_te), d_te.offsets, seed=ctx.seed, extra=kept, dataset=dataset, layer=label
            )
            out_rows.append(
                {
                    "dataset": dataset,
                    "layer": label,
                    "metric": metric,
                    "value": round(value, 2),
                    "n": len(y_te),
                    "lo": lo,
                    "hi": hi,
                    "unit": SENTENCE,
                    "clusters": len(test),
                }
            )
            mixes.setdefault(task, {})[label] = probe.mix_weights()
            if ctx.progress is not None:
                ctx.progress(0.2 + 0.8 * k / (len(tasks) * len(rows)), f"{task} / {row}: {value:.1f}")
    n_rows, s_te_words = inputs.n_rows, inputs.test_words
    model = embedder if needs_ctx else glove
    params = {"rows": list(rows), "tasks": list(tasks), "limit": limit, "train_limit": train_limit}
    return ProbeResult(
        model.name,
        "mix",
        out_rows,
        dataset=DATASET,
        fingerprint=model.fingerprint(),
        params={**params, "seed": ctx.seed, "epochs": epochs} | ({} if glove is not None else {"glove_input": False}),
        extra={
            **({} if glove is not None else {"warning": _warning(missing), "missing": missing}),
            "mix": mixes,
            "feature_s": round(t_feat, 1),
            "total_s": round(time.perf_counter() - t0, 1),
            "train_tokens": n_rows,
            "test_tokens": s_te_words,
            "data_hash": data_hash(
                *(
                    part
                    for sents in (train, test)
                    for part in (
                        [list(s.words) for s in sents],
                        [list(s.pos) for s in sents],
                        [list(s.chunks) for s in sents],
                    )
                )
            ),
            **kept,
        },
    )


def mix_baselines(
    ctx: RunContext, tasks: Sequence[str] = TASKS, epochs: int = 10, train_limit: int | None = None, **_options
) -> list[ProbeResult]:
    """The "baseline" row: GloVe 6B 50d input only (it does not depend on the probed model); without GloVe,
    its rows marked missing."""
    glove, missing = _glove()
    if glove is None:
        return [_missing_baseline(ctx, _parse_tasks(tasks), epochs, train_limit, missing)]
    return [run_mix(glove, ctx=ctx, rows=("baseline",), tasks=tasks, epochs=epochs, train_limit=train_limit)]


PROBE = ProbeSpec(
    name="mix",
    title="λ ablation — learned scalar mix (CoNLL-2000 POS + chunking)",
    description="scalar-mix λ ablation: POS accuracy and chunk F1 (CoNLL-2000)",
    run=run_mix,
    baselines=mix_baselines,
    tables=mix_tables,
    table_titles={"mix": "Scalar-mix λ ablation on CoNLL-2000 (ours) and the paper's Table 2 (dev sets)"},
    chart=ChartSpec(
        metrics=("accuracy", "chunk_F1"),
        datasets=("conll2000-test:pos", "conll2000-test:chunk"),
        layer_order=ROWS + NO_GLOVE_ROWS,
    ),
    options=(
        Option(
            "rows",
            str,
            "all",
            "'all' (last; all λ=1; all λ=0.001) or rows separated by ';' "
            "(the baseline row runs as the probe's baseline)",
            _parse_rows,
        ),
        Option("tasks", str, "pos,chunk", "comma-separated tasks: pos, chunk", _parse_tasks),
        Option("epochs", int, 6, "maximum training epochs per row", positive=True),
        Option(
            "train_limit",
            int,
            None,
            "train on the first N CoNLL-2000 train sentences (cached full-split features)",
            positive=True,
        ),
    ),
    baseline_models={BASELINE_MODEL: "GloVe 6B 50d input only"},
    min_layers=2,
    uses_layers=False,
    embeds=conll_embeds,
    summary=lambda res: [
        f"  {task:<6} {row:<12} s = {w['s']}  γ = {w['gamma']}"
        for task, per_row in res.extra.get("mix", {}).items()
        for row, w in per_row.items()
        if w
    ],
)
