"""Linear CKA between layers (Kornblith et al. 2019): the ``cka`` probe; the maths is ``probes.estimators.cka``.

    python -m probes cka --model minilm --limit 50                   # minilm's layer × layer matrix
    python -m probes cka --model elmo-small --against minilm         # and elmo-small's layers × minilm's
    res = run_cka(load_embedder("elmo-small"), None, RunContext(limit=40), against="minilm")
    res.extra["matrix"], res.extra["against"]["matrix"]              # the full matrices, as lists of rows

Data: the words of SemCor's first ``ctx.limit`` sentences (default ``DEFAULT_LIMIT``; multiword tokens
split, as ``probes.tasks.contextuality.semcor_sentences`` reads them), each layer from ``Embedder.embed``
(no feature cache: these are the numbers the Layer profile page has always drawn), at most
``max_vectors`` words (a seeded sample of rows, the same words for every layer and for both models).
Every layer of the model is compared (``--layers`` does not apply).

Rows, one per cell of the matrix: ``{"dataset": "semcor-first40", "layer": "i", "metric": "cka_j",
"value", "n": words compared}`` = CKA between the model's layers i and j (4 decimals; the matrix at full
precision is ``extra["matrix"]``, its labels ``extra["layers"]``). With ``--against B`` also the
cross-model cells, dataset ``"semcor-first40 vs B"``: CKA between the model's layer i and B's layer j
(``extra["against"]``). On the Probes page the metric ``cka_j`` draws, for each model, how similar
every layer is to its layer j. No baselines; ``PROBE.tables`` gives one model × layer table of the cells
(``tables.md`` with the other probes'); not in ``reproduce``'s default probes.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from models.registry import load_embedder
from probes.errors import ProbeInputError
from probes.estimators.cka import cka_matrix
from probes.registry import ChartSpec, Option, ProbeSpec, RunContext, no_baselines
from probes.results import ProbeResult
from probes.tasks.contextuality import semcor_sentences

NAME = "cka"
DEFAULT_LIMIT = 500
MAX_VECTORS = 3000
CHART_LAYERS = 64  # the Probes page offers cka_0 … cka_63 (those present)


def layer_vectors(embedder, sentences: list[list[str]]) -> list[np.ndarray]:
    """Every layer's (words, dim) vectors of ``sentences``, in order."""
    outs = embedder.embed(sentences)
    return [np.concatenate([o.vectors[j] for o in outs]) for j in range(embedder.num_layers)]


def layer_labels(embedder) -> list[str]:
    return [str(i) for i in (embedder.info.layer_ids or range(embedder.num_layers))]


def cells(dataset: str, rows: list[str], cols: list[str], matrix: np.ndarray, n: int) -> list[dict]:
    return [
        {"dataset": dataset, "layer": r, "metric": f"cka_{c}", "value": round(float(matrix[i, j]), 4), "n": n}
        for i, r in enumerate(rows)
        for j, c in enumerate(cols)
    ]


def run_cka(
    embedder, layers=None, ctx: RunContext = RunContext(), *, against=None, max_vectors: int | None = MAX_VECTORS
) -> ProbeResult:
    """The layer × layer CKA matrix of ``embedder`` (and, with ``against``, a model name or a loaded
    Embedder, its layers × the other model's) on SemCor's first sentences; see the module doc."""
    t0 = time.perf_counter()
    other = load_embedder(against) if isinstance(against, str) else against
    if isinstance(against, str) and ctx.device is not None:
        other.to(ctx.device)
    dataset, sentences = semcor_sentences(ctx.limit if ctx.limit is not None else DEFAULT_LIMIT)
    if not sentences:
        raise ProbeInputError(f"{dataset}: no sentences to compare layers on.")
    a = layer_vectors(embedder, sentences)
    total = len(a[0])
    rows = None
    if max_vectors is not None and total > max_vectors:
        rows = np.sort(np.random.default_rng(ctx.seed).choice(total, size=max_vectors, replace=False))
        a = [X[rows] for X in a]
    if ctx.progress is not None:
        ctx.progress(0.5 if other is not None else 0.9, f"{embedder.name} embedded")
    la, n = layer_labels(embedder), len(a[0])
    try:
        within = cka_matrix(a)
        out = cells(dataset, la, la, within, n)
        extra = {"sentences": len(sentences), "words": total, "compared": n, "layers": la, "matrix": within.tolist()}
        if other is not None:
            b = layer_vectors(other, sentences)
            across = cka_matrix(a, [Y[rows] for Y in b] if rows is not None else b)
            lb = layer_labels(other)
            out += cells(f"{dataset} vs {other.name}", la, lb, across, n)
            extra["against"] = {
                "model": other.name,
                "fingerprint": other.fingerprint(),
                "layers": lb,
                "matrix": across.tolist(),
            }
    except ValueError as exc:  # too few words, a constant layer, two models that split words differently
        raise ProbeInputError(f"CKA on {dataset}: {exc}") from None
    extra["total_s"] = round(time.perf_counter() - t0, 1)
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
            "against": None if other is None else other.name,
        },
        extra=extra,
    )


def _matrix_text(matrix: list[list[float]], rows: list[str], cols: list[str]) -> str:
    return pd.DataFrame(matrix, index=rows, columns=cols).to_string(float_format=lambda v: f"{v:.3f}")


def summary(res: ProbeResult) -> list[str]:
    """The command line's printout: the matrix (and the cross-model one), rows = the model's layers."""
    la = res.extra["layers"]
    out = [f"{res.model}: CKA, layer × layer", _matrix_text(res.extra["matrix"], la, la)]
    if "against" in res.extra:
        b = res.extra["against"]
        out += [f"{res.model} layers × {b['model']} layers", _matrix_text(b["matrix"], la, b["layers"])]
    return out


def _layer_key(label) -> tuple:
    return (0, int(label), "") if str(label).isdigit() else (1, 0, str(label))


def cka_tables(df: pd.DataFrame, extras: list[dict] | None = None) -> dict[str, pd.DataFrame]:
    """ "cka": one row per (model, dataset, layer i), one column per layer j (CKA of i and j)."""
    sel = df[df["probe"] == NAME]
    if sel.empty:
        return {}
    wide = sel.pivot_table(index=["model", "dataset", "layer"], columns="metric", values="value", aggfunc="last")
    wide.columns = [c.removeprefix("cka_") for c in wide.columns]
    wide = wide[sorted(wide.columns, key=_layer_key)].reset_index()
    wide = wide.sort_values(
        ["model", "dataset", "layer"], key=lambda col: col.map(_layer_key) if col.name == "layer" else col
    )
    return {"cka": wide.reset_index(drop=True).rename_axis(columns=None)}


PROBE = ProbeSpec(
    name=NAME,
    title="CKA — linear CKA between layers (SemCor)",
    description="linear CKA (Kornblith et al. 2019) between every two layers of a model, or of two models "
    "(--against), on SemCor's words",
    run=run_cka,
    baselines=no_baselines,
    tables=cka_tables,
    table_titles={"cka": "Linear CKA between layers (Kornblith et al. 2019): row layer × column layer, SemCor words"},
    chart=ChartSpec(metrics=tuple(f"cka_{j}" for j in range(CHART_LAYERS)), y_range=(0.0, 1.0)),
    options=(
        Option("against", help="also compare every layer with every layer of this model (a name or reference)"),
        Option(
            "max_vectors",
            type=int,
            default=MAX_VECTORS,
            positive=True,
            help=f"compare at most this many words (a seeded sample, default {MAX_VECTORS})",
        ),
    ),
    uses_layers=False,
    summary=summary,
    in_default_reproduce=False,
)
