"""Linear CKA between layers (Kornblith et al. 2019): the ``cka`` probe; the maths is ``probes.estimators.cka``.

    python -m probes cka --model minilm --limit 50                   # minilm's layer × layer matrix
    python -m probes cka --model elmo-small --against minilm         # and elmo-small's layers × minilm's
    res = run_cka(load_embedder("elmo-small"), None, RunContext(limit=40), against="minilm")
    res.extra["matrix"], res.extra["against"]["matrix"]              # the full matrices, as lists of rows

Data: the tokens of SemCor's first ``ctx.limit`` sentences, punctuation included (default ``DEFAULT_LIMIT``;
multiword tokens split, as ``probes.tasks.sentences.semcor_sentences`` reads them), each layer from ``Embedder.embed``
(no feature cache: these are the numbers the Layer profile page has always drawn), at most
``max_vectors`` words (a seeded sample of rows, the same words for every layer and for both models).
Every layer of the model is compared (``--layers`` does not apply).

Rows, one per cell of the matrix: ``{"dataset": "semcor-first40", "layer": "i", "metric": "cka_j",
"value", "n": words compared, "lo", "hi", "unit": "sentence", "clusters": sentences}`` = CKA between the
model's layers i and j (4 decimals; linear CKA, the biased estimator: ~0.01–0.03 above 0 for unrelated rows at
this size) and its 95% bootstrap interval over the sentences of the compared words
(``cka_interval``, ``--resamples`` = 200; ``extra["bootstrap_s"]`` its cost: about 4 s of a 45 s
elmo-small × minilm run on 40 sentences). The matrix at full precision is ``extra["matrix"]`` (its interval
``extra["lo"]``, ``extra["hi"]``), its labels ``extra["layers"]``; the command line prints "value [lo, hi]".
With ``--against B`` also the cross-model cells, dataset ``"semcor-first40 vs B"``: CKA between the model's
layer i and B's layer j (``extra["against"]``). On the Probes page the metric ``cka_j`` draws, for each
model, how similar every layer is to its layer j. No baselines; ``PROBE.tables`` gives one model × layer
table of the cells, "value [lo, hi]" (``tables.md`` with the other probes'); not in ``reproduce``'s default probes.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from models.registry import load_embedder
from probes.errors import ProbeInputError
from probes.estimators.cka import RESAMPLES, cka_interval, cka_matrix
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext, no_baselines
from probes.results import ProbeResult
from probes.stats.units import value_interval_text
from probes.tasks.sentences import semcor_sentences

NAME = "cka"
DEFAULT_LIMIT = 500
MAX_VECTORS = 3000
MIN_WORDS = 10  # fewer: CKA between any two wide layers is near 1 (exactly 1 with two words)
MAX_BOOTSTRAP_WORDS = 4000  # the sentence bootstrap holds a words × words Gram matrix per layer (128 MB at 4,000)
CHART_LAYERS = 64  # the Probes page offers cka_0 … cka_63 (those present)


def layer_vectors(embedder, sentences: list[list[str]]) -> list[np.ndarray]:
    """Every layer's (words, dim) vectors of ``sentences``, in order."""
    embedder.check_text(sentences)  # the dataset as a whole, as an extraction checks it (a static model's words)
    outs = embedder.embed(sentences)
    return [np.concatenate([o.vectors[j] for o in outs]) for j in range(embedder.num_layers)]


def layer_labels(embedder) -> list[str]:
    return [str(i) for i in (embedder.info.layer_ids or range(embedder.num_layers))]


def cells(dataset: str, rows: list[str], cols: list[str], matrix: np.ndarray, n: int, interval, clusters: int):
    """One row per cell, with its bootstrap interval over ``clusters`` sentences (``interval``: (lo, hi))."""
    lo, hi = interval
    return [
        {
            "dataset": dataset,
            "layer": r,
            "metric": f"cka_{c}",
            "value": round(float(matrix[i, j]), 4),
            "n": n,
            "lo": round(float(lo[i, j]), 4),
            "hi": round(float(hi[i, j]), 4),
            "unit": "sentence",
            "clusters": clusters,
        }
        for i, r in enumerate(rows)
        for j, c in enumerate(cols)
    ]


def cka_sentences(limit: int | None) -> tuple[str, list[list[str]]]:
    """(dataset name, sentences) a run compares layers on: SemCor's first ``limit`` (default ``DEFAULT_LIMIT``)."""
    return semcor_sentences(limit if limit is not None else DEFAULT_LIMIT)


def embeds(limit: int | None, options: dict) -> Embeds:
    """What a run embeds (``ProbeSpec.embeds``): SemCor's first sentences, never cached (key None)."""
    return [(None, cka_sentences(limit)[1])]


def run_cka(
    embedder,
    layers=None,
    ctx: RunContext = RunContext(),
    *,
    against=None,
    max_vectors: int | None = MAX_VECTORS,
    resamples: int = RESAMPLES,
) -> ProbeResult:
    """The layer × layer CKA matrix of ``embedder`` (and, with ``against``, a model name or a loaded
    Embedder, its layers × the other model's) on SemCor's first sentences; see the module doc."""
    t0 = time.perf_counter()
    dataset, sentences = cka_sentences(ctx.limit)
    if not sentences:
        raise ProbeInputError(f"{dataset}: no sentences to compare layers on.")
    total = sum(len(s) for s in sentences)  # one vector per word (the Embedder contract)
    compared = min(max_vectors or total, total)
    # both refusals before the embedding, which costs a large model minutes
    if compared > MAX_BOOTSTRAP_WORDS:
        raise ProbeInputError(_too_many(compared))
    if compared < MIN_WORDS:  # two centred points give CKA 1 between any layers; a handful, nearly 1
        raise ProbeInputError(
            f"{dataset}: {compared} word(s) to compare layers on; CKA needs at least {MIN_WORDS} (with two, every "
            "pair of layers gives exactly 1): give more sentences (--limit) or a larger --max-vectors."
        )
    other = load_embedder(against, ctx.device) if isinstance(against, str) else against  # --device over its own
    if isinstance(against, str) and ctx.device is not None:
        other.to(ctx.device)
    a = layer_vectors(embedder, sentences)
    groups = np.repeat(np.arange(len(sentences)), [len(s) for s in sentences])  # each word's sentence
    rows = None
    if max_vectors is not None and total > max_vectors:
        rows = np.sort(np.random.default_rng(ctx.seed).choice(total, size=max_vectors, replace=False))
        a, groups = [X[rows] for X in a], groups[rows]
    if ctx.progress is not None:
        ctx.progress(0.5 if other is not None else 0.9, f"{embedder.name} embedded")
    la, n, clusters = layer_labels(embedder), len(a[0]), len(np.unique(groups))
    try:
        within = cka_matrix(a)
        t1 = time.perf_counter()
        interval = cka_interval(a, None, groups, resamples=resamples, seed=ctx.seed)
        boot = time.perf_counter() - t1
        out = cells(dataset, la, la, within, n, interval, clusters)
        extra = {"sentences": len(sentences), "words": total, "compared": n, "layers": la, "matrix": within.tolist()}
        extra |= {"lo": interval[0].tolist(), "hi": interval[1].tolist(), "resamples": resamples}
        if other is not None:
            b = layer_vectors(other, sentences)
            b = [Y[rows] for Y in b] if rows is not None else b
            across, t1 = cka_matrix(a, b), time.perf_counter()
            interval = cka_interval(a, b, groups, resamples=resamples, seed=ctx.seed)
            boot += time.perf_counter() - t1
            lb = layer_labels(other)
            out += cells(f"{dataset} vs {other.name}", la, lb, across, n, interval, clusters)
            extra["against"] = {
                "model": other.name,
                "fingerprint": other.fingerprint(),
                "layers": lb,
                "matrix": across.tolist(),
                "lo": interval[0].tolist(),
                "hi": interval[1].tolist(),
            }
    except ValueError as exc:  # too few words, a constant layer, two models that split words differently
        raise ProbeInputError(f"CKA on {dataset}: {exc}") from None
    extra["total_s"], extra["bootstrap_s"] = round(time.perf_counter() - t0, 1), round(boot, 1)
    return ProbeResult(
        embedder.name,
        NAME,
        out,
        dataset=dataset,
        fingerprint=embedder.fingerprint(),
        params={
            "limit": ctx.limit,
            "seed": ctx.seed,
            "max_vectors": max_vectors,
            "resamples": resamples,
            "against": None if other is None else other.name,
        },
        extra=extra,
    )


def _too_many(words) -> str:
    return (
        f"CKA on {words} words: at most {MAX_BOOTSTRAP_WORDS:,} (--max-vectors; the interval's bootstrap holds words²)."
    )


def _max_vectors(raw) -> int:
    if int(raw) > MAX_BOOTSTRAP_WORDS:
        raise ProbeInputError(_too_many(raw))
    return int(raw)


def _matrix_text(part: dict, rows: list[str], cols: list[str]) -> str:
    """ "value [lo, hi]" cells (the value alone for a result saved before the intervals, or of one sentence: no
    interval, its bounds stored as None)."""
    v, lo, hi = (np.asarray(part.get(k, part["matrix"]), dtype=float) for k in ("matrix", "lo", "hi"))
    bounds = lambda i, j: f" [{lo[i, j]:.3f}, {hi[i, j]:.3f}]" if np.isfinite([lo[i, j], hi[i, j]]).all() else ""
    text = [[f"{v[i, j]:.3f}" + bounds(i, j) for j in range(v.shape[1])] for i in range(v.shape[0])]
    return pd.DataFrame(text, index=rows, columns=cols).to_string()


def summary(res: ProbeResult) -> list[str]:
    """The command line's printout: the matrix (and the cross-model one) with 95% intervals over sentences."""
    la, how = res.extra["layers"], "value [95% interval over sentences]"
    out = [f"{res.model}: CKA, layer × layer, {how}", _matrix_text(res.extra, la, la)]
    if "against" in res.extra:
        b = res.extra["against"]
        out += [f"{res.model} layers × {b['model']} layers, {how}", _matrix_text(b, la, b["layers"])]
    return out


def _layer_key(label) -> tuple:
    return (0, int(label), "") if str(label).isdigit() else (1, 0, str(label))


def cka_tables(df: pd.DataFrame, extras: list[dict] | None = None) -> dict[str, pd.DataFrame]:
    """ "cka": one row per (model, dataset, layer i), one column per layer j: "CKA of i and j [95% interval]"."""
    sel = df[df["probe"] == NAME]
    if sel.empty:
        return {}
    sel = sel.assign(cell=[value_interval_text(*v, digits=3) for v in zip(sel["value"], sel["lo"], sel["hi"])])
    wide = sel.pivot_table(index=["model", "dataset", "layer"], columns="metric", values="cell", aggfunc="last")
    wide.columns = [c.removeprefix("cka_") for c in wide.columns]
    wide = wide[sorted(wide.columns, key=_layer_key)].reset_index()
    wide = wide.sort_values(
        ["model", "dataset", "layer"], key=lambda col: col.map(_layer_key) if col.name == "layer" else col
    )
    return {"cka": wide.reset_index(drop=True).rename_axis(columns=None)}


def _comparable(embedder, options: dict) -> None:
    """A one-layer model (a static one) and nothing to compare it with: its CKA with itself is 1 by definition."""
    if embedder.num_layers < 2 and not options.get("against"):
        raise ProbeInputError(
            f"{embedder.name} has one layer: CKA of it against itself is 1 by definition. Compare it with another "
            "model (--against NAME)."
        )


PROBE = ProbeSpec(
    trains=False,
    name=NAME,
    title="CKA — linear CKA between layers (SemCor)",
    description="linear CKA (Kornblith et al. 2019) between every two layers of a model, or of two models "
    "(--against), on SemCor's words",
    run=run_cka,
    baselines=no_baselines,
    check_pair=_comparable,
    tables=cka_tables,
    table_titles={"cka": "Linear CKA between layers (Kornblith et al. 2019): row layer × column layer, SemCor words"},
    chart=ChartSpec(
        metrics=tuple(f"cka_{j}" for j in range(CHART_LAYERS)),
        y_range=(0.0, 1.0),
        axis_titles=tuple((f"cka_{j}", f"linear CKA with layer {j}") for j in range(CHART_LAYERS)),
    ),
    options=(
        Option("against", help="also compare every layer with every layer of this model (a name or reference)"),
        Option(
            "max_vectors",
            type=int,
            default=MAX_VECTORS,
            positive=True,
            parse=_max_vectors,
            help=f"compare at most this many words (a seeded sample, default {MAX_VECTORS}, ≤ {MAX_BOOTSTRAP_WORDS})",
        ),
        Option(
            "resamples",
            type=int,
            default=RESAMPLES,
            positive=True,
            help=f"bootstrap resamples of the sentences for each cell's 95% interval (default {RESAMPLES})",
        ),
    ),
    uses_layers=False,
    summary=summary,
    in_default_reproduce=False,
    embeds=embeds,
)
