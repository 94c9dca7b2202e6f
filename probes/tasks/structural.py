"""``structural``: Hewitt & Manning's (2019) structural probe per layer — is the dependency tree in the geometry?

    python -m probes structural --model minilm                         # UD English EWT train / dev / test
    python -m probes structural --model glove-6b-50d --limit 50 --rank 32
    python -m probes structural --model minilm --train my-train.conllu --test my-test.conllu --control

Data: UD English EWT (``ud_english_ewt/en_ewt-ud-{train,dev,test}.conllu``) or the user's CoNLL-U files
(``--train`` / ``--dev`` / ``--test``, ``PROBE.inputs``), read as trees by ``corpora.conllu.iter_trees``
(``--limit``: the first N sentences of each). A dataset is named and hashed as every user dataset is
(``probes.tasks.datafiles.DataFiles``, settings ``conllu:1``), so its feature-cache entries are those of the
``tag`` probe on the same files: UPOS, DEPREL and trees of one treebank share their vectors.

Per layer spec (``probes.estimators.structural``): the distance probe (UUAS, DSpr.) and the depth probe
(root accuracy, NSpr.), each trained on train with early stopping on the dev loss (no --dev: the last tenth
of the training sentences) and scored on dev and test; ``--rank`` (default min(``MAX_RANK``, dim)), ``--epochs``.
Every row carries a 95% interval resampling sentences (``"unit": "sentence"``, ``"clusters"``: sentences); DSpr.
and NSpr. keep every sentence length in every resample, each length's spread pooled with adjacent lengths'
(``probes.estimators.tree_metrics.length_interval``).
``--control``: the distance probe is trained again on random trees over the same sentences (uniform labelled
trees, so the same lengths; ``random_tree``) and scored against them: ``UUAS_control`` and ``selectivity``
(UUAS − UUAS_control, points).

Baselines, as the paper's: the left-to-right chain over the non-punctuation words (``chain-baseline``, its
own result: UUAS), layer 0 (the context-independent layer, always among the layers) and the random-weight
twin (``--model random:minilm``, ``models.random_init``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from corpora.conllu import DepTree, iter_trees
from corpora.paths import data_path
from features.extract import Features, get_features
from probes.errors import ProbeInputError
from probes.estimators.structural import MAX_RANK, StructuralProbe
from probes.estimators.tree_metrics import (
    GoldTrees,
    chain_edges,
    difference,
    predicted_edges,
    random_tree,
    stat_row,
    structural_rows,
    uuas_counts,
    uuas_row,
)
from probes.inputs import Preview
from probes.layers import LayerSpec, as_layer_specs, needed_layers
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext
from probes.reporting.tables import dataset_tables
from probes.result_names import TREE_EPOCHS, tree_task
from probes.results import ProbeResult
from probes.tasks.datafiles import ROLES, DataFiles, file_inputs, file_options, read_roles
from probes.tasks.token_labels import layer_matrix

NAME = "structural"
CHAIN = "chain-baseline"
EPOCHS = TREE_EPOCHS


FORMATS = ("CoNLL-U",)
EWT = "ud_english_ewt/en_ewt-ud-{}.conllu"
EVALS = ("dev", "test")
METRICS = ("UUAS", "DSpr", "root_acc", "NSpr", "selectivity", "UUAS_control")


def load_splits(
    limit: int | None, train=None, dev=None, test=None, name=None
) -> tuple[DataFiles, dict[str, list[DepTree]]]:
    """The files (default: UD English EWT train / dev / test) and each role's first ``limit`` trees."""
    if not (train or dev or test):
        train, dev, test = (data_path(EWT.format(role)) for role in ("train", "dev", "test"))
    files = DataFiles.checked(NAME, train, test, dev, name, settings="conllu:1", default="UD English EWT")
    files, trees = read_roles(files, iter_trees, limit)
    paths = files.paths()
    for role, ts in trees.items():  # one-word trees have no pair to learn or score: a 0 loss, a UUAS of nothing
        if not any(len(t.words) >= 2 for t in ts):
            raise ProbeInputError(
                f"{paths[role]}: no sentence of two words or more among the {len(ts)} read ({role}); the structural "
                "probe learns and scores distances between words."
            )
    return files, trees


def sentence_vectors(feats: Features, spec: LayerSpec, num_layers: int) -> list[np.ndarray]:
    """The spec's vectors of each sentence, (n_s, dim) float32."""
    X = np.asarray(layer_matrix(feats, spec, num_layers), dtype=np.float32)
    return np.split(X, feats.offsets[1:-1])


def fit_predict(
    kind: str, X: dict[str, list[np.ndarray]], trees: dict[str, GoldTrees], ctx: RunContext, settings: dict
) -> tuple[dict[str, list[np.ndarray]], list[dict]]:
    """One probe fitted on train (early stopping on dev, or on the last tenth of train without one):
    its predictions on dev and test, and its training history."""
    dev = (X["dev"], trees["dev"]) if "dev" in X else None
    probe = fit_tree_probe(kind, X["train"], trees["train"], dev, seed=ctx.seed, device=ctx.device, **settings)
    return {role: probe.predict(X[role]) for role in EVALS if role in X}, probe.history_


def training_part(sentences: int) -> int:
    """How many of a training file's sentences train a probe that has no dev file: all but the last tenth, on
    which it stops early."""
    return sentences - sentences // 10


def fit_tree_probe(
    kind: str, X: list[np.ndarray], trees: GoldTrees, dev: tuple[list[np.ndarray], GoldTrees] | None = None, **settings
) -> StructuralProbe:
    """A ``kind`` probe ("distance" or "depth") fitted on ``X`` (one (n_s, dim) array per sentence) and its gold
    ``trees``, stopping early on ``dev`` (vectors, trees), or on the last tenth of ``X`` without one
    (``training_part``). ``settings``: the estimator's (epochs, rank, seed, device, …)."""
    if dev is None:
        cut = training_part(len(X))
        X, trees, dev = X[:cut], trees.part(slice(0, cut)), (X[cut:] or None, trees.part(slice(cut, None)))
    return StructuralProbe(kind, **settings).fit(X, trees, *dev)


def control_rows(
    name: str,
    layer: str,
    pred: list[np.ndarray],
    cpred: list[np.ndarray],
    trees: GoldTrees,
    control: GoldTrees,
    seed: int,
) -> list[dict]:
    """UUAS of the probe trained on random trees (against those trees) and the selectivity, task − control."""
    task = uuas_counts([predicted_edges(p, t) for p, t in zip(pred, trees.trees)], trees.trees)
    ctrl_edges = [predicted_edges(p, t) for p, t in zip(cpred, control.trees)]
    both = np.hstack([task, uuas_counts(ctrl_edges, control.trees)])
    return [
        uuas_row(name, layer, ctrl_edges, control.trees, metric="UUAS_control", seed=seed),
        stat_row(name, layer, "selectivity", both, difference, int(task[:, 1].sum()), seed=seed),
    ]


def run_layers(
    embedder, specs: Sequence[LayerSpec], ctx: RunContext, files: DataFiles, trees: dict, settings: dict, control: bool
) -> tuple[list[dict], dict]:
    """Rows of every layer spec (distance and depth probe, and the control) and ``extra`` (timings, histories)."""
    t0 = time.perf_counter()
    L = embedder.num_layers
    needed = needed_layers(specs, L)
    feats = {}
    for i, (role, ts) in enumerate(trees.items()):
        feats[role] = get_features(
            embedder,
            files.feature_key(role, files.limited),
            [list(t.words) for t in ts.trees],
            needed,
            progress=ctx.sub_progress(0.5 * i / len(trees), 0.5 * (i + 1) / len(trees)),
            show_progress=ctx.show_progress,
            root=ctx.feature_root,
        )
    extra: dict = {"feature_s": round(time.perf_counter() - t0, 1), "history": {}, "fit_s": {}}
    what = tree_task(settings["rank"], settings["epochs"])
    rng = np.random.default_rng(ctx.seed)
    random_trees = (
        {role: GoldTrees.of([random_tree(t, rng) for t in g.trees]) for role, g in trees.items()} if control else {}
    )
    rows: list[dict] = []
    for k, spec in enumerate(specs):
        t_fit = time.perf_counter()
        X = {role: sentence_vectors(f, spec, L) for role, f in feats.items()}
        preds = {}
        for kind in ("distance", "depth"):
            preds[kind], extra["history"][f"{spec.label}:{kind}"] = fit_predict(kind, X, trees, ctx, settings)
            for role, pred in preds[kind].items():
                rows += structural_rows(
                    files.row_dataset(role, what), spec.label, kind, pred, trees[role], seed=ctx.seed
                )
        if control:
            cpreds, extra["history"][f"{spec.label}:control"] = fit_predict("distance", X, random_trees, ctx, settings)
            for role, cpred in cpreds.items():
                name = files.row_dataset(role, what)
                pred = preds["distance"][role]
                rows += control_rows(name, spec.label, pred, cpred, trees[role], random_trees[role], ctx.seed)
        extra["fit_s"][spec.label] = round(time.perf_counter() - t_fit, 1)
        if ctx.progress is not None:
            ctx.progress(0.5 + 0.5 * (k + 1) / len(specs), f"structural probe layer {spec.label}")
    extra["total_s"] = round(time.perf_counter() - t0, 1)
    return rows, extra


def _params(files: DataFiles, ctx: RunContext, options: dict) -> dict:
    return {
        **{k: v for k, v in options.items() if k not in ROLES},
        **{role: str(p) for role, p in files.paths().items()},
        "limit": files.limited,  # None where the limit cut nothing: the full run
        "seed": ctx.seed,
    }


def _counts(trees: dict[str, list[DepTree]]) -> dict:
    return {role: {"sentences": len(ts), "words": sum(len(t.words) for t in ts)} for role, ts in trees.items()}


def run_structural(
    embedder,
    layers: str | list[LayerSpec] | None = None,
    ctx: RunContext = RunContext(),
    rank: int | None = None,
    epochs: int = EPOCHS,
    control: bool = False,
    **files_options,
) -> ProbeResult:
    """The distance and depth probes on every requested layer spec (EWT, or the user's CoNLL-U files)."""
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    files, trees = load_splits(ctx.limit, **files_options)
    gold = {role: GoldTrees.of(ts) for role, ts in trees.items()}
    settings = {"rank": rank, "epochs": epochs}
    rows, extra = run_layers(embedder, specs, ctx, files, gold, settings, control)
    options = {**files_options, "rank": rank, "epochs": epochs, "control": control}
    return ProbeResult(
        embedder.name,
        NAME,
        rows,
        dataset=files.label,
        fingerprint=embedder.fingerprint(),
        params={**_params(files, ctx, options), "layers": [s.label for s in specs]},
        extra={**extra, "counts": _counts(trees)},
    )


def structural_baselines(
    ctx: RunContext, rank=None, epochs=EPOCHS, control=False, **files_options
) -> list[ProbeResult]:
    """The left-to-right chain over the non-punctuation words: its UUAS on dev and test (under the run's dataset
    names, ``tree_task``, so that its table has its baseline)."""
    files, trees = load_splits(ctx.limit, **files_options)
    rows = [
        uuas_row(
            files.row_dataset(role, tree_task(rank, epochs)),
            "baseline",
            [chain_edges(t) for t in ts],
            ts,
            seed=ctx.seed,
        )
        for role, ts in trees.items()
        if role in EVALS
    ]
    return [ProbeResult(CHAIN, NAME, rows, dataset=files.label, params=_params(files, ctx, files_options))]


def summary(result: ProbeResult) -> list[str]:
    """The command line's table: every metric per layer on the test split (dev when there is no test row)."""
    df = pd.DataFrame(result.rows)
    task = tree_task(result.params.get("rank"), result.params.get("epochs", EPOCHS))
    df = df[df["dataset"].str.endswith(f":test:{task}")]
    if df.empty:
        return []
    wide = df.pivot_table(index="layer", columns="metric", values="value", aggfunc="first", sort=False)
    wide = wide[[m for m in METRICS if m in wide.columns]]
    return [f"{df['dataset'].iloc[0]} (Spearman × 100):", wide.to_string(), ""]


def _file_options(options: dict) -> dict:
    """The options that choose the files (the runner's others shape the probe)."""
    return {k: options.get(k) for k in (*ROLES, "name")}


def structural_embeds(limit: int | None, options: dict) -> Embeds:
    """What a run embeds (``ProbeSpec.embeds``): each file's trees, under the keys ``run_layers`` reads."""
    files, trees = load_splits(limit, **_file_options(options))
    return [(files.feature_key(role, files.limited), [list(t.words) for t in ts]) for role, ts in trees.items()]


def preview_files(limit: int, options: dict) -> Preview:
    """The app's preview: sentences and words per file, the relations, the first training trees."""
    files, trees = load_splits(limit, **_file_options(options))
    counts = pd.DataFrame([{"file": role, **c} for role, c in _counts(trees).items()])
    rels = {role: Counter(r for t in ts for r in t.deprels) for role, ts in trees.items()}
    labels = pd.DataFrame(
        [{"relation": r, "train": c, "test": rels["test"].get(r, 0)} for r, c in rels["train"].most_common()]
    )
    sample = pd.DataFrame(
        [{"sentence": " ".join(t.words), "heads": " ".join(map(str, t.heads))} for t in trees["train"][:5]]
    )
    return Preview(files.label, f"dependency trees, first {limit} sentences of each file", counts, labels, sample)


PROBE = ProbeSpec(
    name=NAME,
    title="Structural — tree distance and depth probes (UD EWT)",
    description="Hewitt & Manning's structural probe per layer: UUAS, DSpr., root accuracy, NSpr. (UD English EWT)",
    run=run_structural,
    baselines=structural_baselines,
    tables=lambda df, extras: dataset_tables(df, NAME),
    table_titles={},
    chart=ChartSpec(metrics=METRICS, axis_titles=(("selectivity", "selectivity (points: UUAS − control UUAS)"),)),
    options=file_options(FORMATS)
    + (
        Option(
            "rank",
            int,
            None,
            f"rank of the probe's linear map (default min({MAX_RANK}, dim))",
            positive=True,
            own_flag=True,  # pos's and tag's --rank is the rank-limited classifier's
        ),
        Option("epochs", int, EPOCHS, "maximum training epochs per row", positive=True),
        Option("control", bool, False, "also train the distance probe on random trees: UUAS_control, selectivity"),
    ),
    summary=summary,
    embeds=structural_embeds,
    baseline_models={CHAIN: "left-to-right chain (UUAS)"},
    inputs=file_inputs(FORMATS),
    preview=preview_files,
    in_default_reproduce=False,
)
