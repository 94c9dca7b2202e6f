"""The WSD probe end to end: 1-NN sense centroids per layer, on the built-in data or on files.

Built-in (no ``--train``/``--test``): SemCor's tagged tokens -> the five all-words sets and ALL. Rows: F1/P/R per
set, ALL and ALL without SemEval-07 (the paper's column), and F1 per POS on ALL without SemEval-07
(``ALL-noSE07:NOUN``…: the development set that picks a layer is not in the set that judges it); baselines WordNet's
first sense and the most frequent sense in SemCor. Features come from the feature cache with only the scored tokens'
rows stored (SemCor: ~27% of its words; the model still sees whole sentences).

On files (``--train FILE [--train-keys FILE] (--test FILE [--test-keys FILE] | --folds K)``, format
``xml`` (the framework's) or ``tsv`` (lexical sample), guessed from the suffix): the same loop, the
inventory chosen from the labels (``probes.tasks.wsd.inventory``), rows named by the dataset
(``train@hash→test@hash`` or ``train@hash/5-fold``) so that two datasets never mix in a table or
the feature cache. Without ``--train`` a ``--test`` file is evaluated from SemCor. A lexical sample
also gets F1 per target word (``…:word=bank``, two or more words) and states how many target words
it found and from what (``probes.tasks.wsd.words``: the lemma column or the word form).
Every row carries its 95% interval; per-instance outcomes are kept in ``extra["instances"]``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from corpora.lexical_sample import iter_lexical_sample
from probes.errors import ProbeInputError, check_positive
from probes.inputs import InputFile, Preview
from probes.layers import LayerSpec, as_layer_specs
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext
from probes.results import TRAINING_SLICES, ProbeResult
from probes.tasks.datafiles import first
from probes.tasks.preview import sense_preview
from probes.tasks.wsd import sources
from probes.tasks.wsd.estimator import first_sense_predictions
from probes.tasks.wsd.inventory import WORDNET, choose_kind
from probes.tasks.wsd.rows import evaluate
from probes.tasks.wsd.runner import Plan, layer_predictions
from probes.tasks.wsd.scoring import BY_POS_SET, DEV_SET, EVAL_SETS, PAPER_ALL, KeyFiles, key_dir
from probes.tasks.wsd.tables import BASELINE_MODELS, FIRST_SENSE, SEMCOR_MFS, TRAIN_MFS, wsd_tables
from probes.tasks.wsd.words import TIE_RULE, target_words, wsd_summary

DATASET = "semcor→ALL"
#: The app's quick run trains on this many SemCor sentences whatever its test slice: with SemCor cut to the test's
#: 20 sentences, 644 of 697 test words fall back to the first sense and MiniLM scores 67.0–67.1 at every layer; with
#: 5,000 its layers span 56.8 (L0) to 66.0 (L6) F1 on ALL, the full run's shape (52.3 to 68.3; docs/benchmarks.md).
QUICK_SEMCOR = 5000
FOLDS = 5  # uploads without a test file: k-fold cross-validation on the training file
TSV = ("lexical-sample TSV",)


def make_plan(
    ctx: RunContext,
    semcor_limit: int | None = None,
    train: str | None = None,
    train_keys: str | None = None,
    test: str | None = None,
    test_keys: str | None = None,
    format: str | None = None,
    folds: int | None = None,
) -> tuple[Plan, str]:
    """(what to train and evaluate on, the dataset's name); ProbeInputError for an unusable request."""
    check_positive(ctx.limit, "--limit")
    check_positive(semcor_limit, "--semcor-limit")
    if train_keys and not train:
        raise ProbeInputError("--train-keys needs --train FILE.")
    if test_keys and not test:
        raise ProbeInputError("--test-keys needs --test FILE.")
    if format and not (train or test):
        raise ProbeInputError("--format applies to --train / --test files.")
    if train and semcor_limit is not None:
        raise ProbeInputError("--semcor-limit applies to the built-in SemCor training data, not to --train.")
    if folds is not None:
        if not train or test:
            raise ProbeInputError("--folds K cross-validates one dataset: give --train FILE and no --test.")
        if folds < 2:
            raise ProbeInputError(f"--folds {folds}: give at least 2 folds.")
    elif train and not test:
        raise ProbeInputError("--train FILE needs --test FILE (held-out evaluation) or --folds K (k-fold).")
    if train is None:
        tr = sources.builtin_train(semcor_limit if semcor_limit is not None else ctx.limit)
    else:
        tr = sources.file_split(train, train_keys, format, ctx.limit, "--train")
    if test is None:
        te = sources.builtin_test(ctx.limit) if train is None else None
    else:
        te = sources.file_split(test, test_keys, format, ctx.limit, "--test")
    if train is None and test is None:
        return Plan(tr, te, WORDNET, seed=ctx.seed), DATASET
    evaluated = te if te is not None else tr
    if folds is not None and folds > len(tr):
        raise ProbeInputError(f"--folds {folds}: {tr.name} has only {len(tr)} instances.")
    labels_of = {evaluated.name: evaluated.labels.keys}  # SemCor's own are WordNet 3.0 keys: the test file decides
    if train is not None:
        labels_of = {tr.name: tr.labels.keys, **labels_of}
    kind = choose_kind(labels_of, tr.has_pos and evaluated.has_pos)
    if train is None and kind != WORDNET:
        raise ProbeInputError(
            f"{te.name}: its labels are not all WordNet 3.0 sense keys with a lemma and POS, "
            "so SemCor cannot train for it; give --train FILE with the same labels."
        )
    name = f"{tr.name}/{folds}-fold" if te is None else f"{tr.name}→{te.name}"
    evaluated.groups = {name: list(range(len(evaluated)))}
    evaluated.by_pos = name if evaluated.has_pos else None
    evaluated.by_word = name if evaluated.words is not None and len(set(evaluated.words)) > 1 else None
    return Plan(tr, te, kind, folds=folds, seed=ctx.seed), name


def _rows(plan: Plan, preds, label: str, seed: int, extra: dict | None) -> list[dict]:
    ev = plan.evaluated
    return evaluate(
        preds,
        ev.golds,
        ev.poses or [""] * len(ev),
        ev.groups,
        label,
        by_pos=ev.by_pos,
        seed=seed,
        extra=extra,
        ids=ev.ids,
        words=ev.words,
        by_word=ev.by_word,
    )


def baseline_predictions(plan: Plan, which: str) -> list[str | None]:
    """Predictions of a no-embedding baseline: WordNet's first sense, or the most frequent training label."""
    ev = plan.evaluated
    if which == FIRST_SENSE:
        inv = plan.inventory()
        return [inv.first_sense(lemma, pos) for lemma, pos in ev.targets]
    if plan.test is not None:
        inv = plan.inventory(range(len(plan.train)) if plan.kind == WORDNET else None)
        return [inv.most_frequent(lemma, pos) for lemma, pos in ev.targets]
    fold, preds = plan.fold_ids(), [None] * len(ev)
    targets = ev.targets
    for f in range(plan.folds):
        inv = plan.inventory([i for i in range(len(fold)) if fold[i] != f])
        for i in [i for i in range(len(fold)) if fold[i] == f]:
            preds[i] = inv.most_frequent(*targets[i])
    return preds


def wsd_baselines(ctx: RunContext, keys: str | Path | None = None, **options) -> list[ProbeResult]:
    """Built-in: WordNet's first sense and the MFS in SemCor. Files: the most frequent training label,
    and WordNet's first sense when the labels are WordNet sense keys."""
    plan, name = make_plan(ctx, **options)
    builtin = options.get("train") is None
    which = ([FIRST_SENSE] if plan.kind == WORDNET else []) + [SEMCOR_MFS if builtin else TRAIN_MFS]
    out = []
    for model in which:
        if model == FIRST_SENSE and name == DATASET:
            first = run_first_sense(ctx.limit, keys, seed=ctx.seed, plan=plan)
            # its numbers do not depend on SemCor, but it belongs to this run's slice: beside the model's rows there
            training = {k: options[k] for k in TRAINING_SLICES if options.get(k) is not None}
            out.append(dataclasses.replace(first, params={**first.params, **training}))
            continue
        preds = baseline_predictions(plan, model)
        label = "first-sense" if model == FIRST_SENSE else "MFS"
        key_files = KeyFiles(keys)
        key_files.write(f"{model}.key.txt", plan.evaluated.ids, preds)
        extra: dict = {"data_hash": plan.data_hash, **target_words(plan.train, plan.evaluated), **key_files.commit()}
        out.append(
            ProbeResult(
                model,
                "wsd",
                _rows(plan, preds, label, ctx.seed, extra),
                dataset=name,
                params={"limit": ctx.limit, **{k: v for k, v in options.items() if v is not None}},
                extra=extra,
            )
        )
    return out


def run_first_sense(
    limit: int | None = None, keys: str | Path | None = None, seed: int = 0, plan: Plan | None = None
) -> ProbeResult:
    """The WordNet first-sense baseline on the built-in evaluation sets (no embeddings)."""
    plan = plan or make_plan(RunContext(limit=limit, seed=seed))[0]
    ev = plan.evaluated
    preds = first_sense_predictions(ev.lemmas, ev.poses)
    key_files = KeyFiles(keys)
    key_files.write("wordnet-first-sense.key.txt", ev.ids, preds)
    extra: dict = {"data_hash": plan.data_hash, **key_files.commit()}
    return ProbeResult(
        FIRST_SENSE,
        "wsd",
        _rows(plan, preds, "first-sense", seed, extra),
        dataset=DATASET,
        params={"limit": limit},
        extra=extra,
    )


def run_wsd(
    embedder,
    layers: str | list[LayerSpec] | None = None,
    ctx: RunContext = RunContext(),
    semcor_limit: int | None = None,
    keys: str | Path | None = None,
    train: str | None = None,
    train_keys: str | None = None,
    test: str | None = None,
    test_keys: str | None = None,
    format: str | None = None,
    folds: int | None = None,
) -> ProbeResult:
    """1-NN WSD for every requested layer spec (see the module docstring for the data).

    ``ctx.limit``: first N sentences (lines) of every dataset; ``semcor_limit`` overrides it for SemCor.
    ``keys``: also write each spec's predictions as a key file (the framework's format) there.
    """
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    t0 = time.perf_counter()
    plan, name = make_plan(ctx, semcor_limit, train, train_keys, test, test_keys, format, folds)
    singles = {s.label for s in specs if s.is_single}
    rows: list[dict] = []
    extra: dict = {}
    key_files = KeyFiles(keys)

    def collect(label: str, preds) -> None:
        rows.extend(_rows(plan, preds, label, ctx.seed, extra))
        stem = f"layer{label}" if label in singles else label.replace(":", "_")
        key_files.write(f"{embedder.name}-{stem}.key.txt", plan.evaluated.ids, preds)

    coverage = layer_predictions(embedder, specs, ctx, plan, collect)
    tr = plan.train
    info = {
        "train": tr.name,
        "train_sentences": tr.sentences,
        "train_instances": len(tr),
        "eval_instances": len(plan.evaluated),
        "inventory": plan.kind,
        **target_words(tr, plan.evaluated),
    }
    if train is None:
        info.update(semcor_sentences=tr.sentences, semcor_tokens=len(tr))
    params = {"layers": [s.label for s in specs], "limit": ctx.limit, "semcor_limit": semcor_limit}
    params.update(
        {
            k: v
            for k, v in (
                ("train", train),
                ("train_keys", train_keys),
                ("test", test),
                ("test_keys", test_keys),
                ("format", format),
                ("folds", folds),
            )
            if v
        }
    )
    if folds:
        params["seed"] = ctx.seed
    return ProbeResult(
        embedder.name,
        "wsd",
        rows,
        dataset=name,
        fingerprint=embedder.fingerprint(),
        params=params,
        extra={**info, "total_s": round(time.perf_counter() - t0, 1), **coverage, **extra, **key_files.commit()},
    )


def wsd_embeds(limit: int | None, options: dict) -> Embeds | None:
    """What a run on the built-in data embeds (``ProbeSpec.embeds``): SemCor, then ALL (None: your files)."""
    if options.get("train") or options.get("test"):
        return None
    semcor = options.get("semcor_limit")
    splits = (sources.builtin_train(limit if semcor is None else semcor), sources.builtin_test(limit))
    return [(s.feature_key, s.layout.sentences) for s in splits]


def preview_files(limit: int, options: dict) -> Preview:
    """The app's preview of lexical-sample files: the request checked as the run checks it, the first lines."""
    _, name = make_plan(RunContext(limit=limit), **{k: v for k, v in options.items() if k != "keys"})
    train, *evals = [first(iter_lexical_sample(options[r]), limit) for r in ("train", "test") if options.get(r)]
    how = f"scored by {options['folds']}-fold cross-validation" if options.get("folds") else "scored on the test file"
    return Preview(name, f"first {limit} lines of each file; {how}", *sense_preview(train, evals))


PROBE = ProbeSpec(
    name="wsd",
    title="WSD — 1-NN word senses (SemCor → Senseval/SemEval, or your data)",
    description="1-nearest-neighbour word sense disambiguation per layer (SemCor -> SE2..SE15, ALL; "
    "or --train/--test files: framework XML + keys, lexical-sample TSV)",
    run=run_wsd,
    baselines=wsd_baselines,
    tables=wsd_tables,
    table_titles={
        "wsd": "WSD: 1-NN on SemCor sense centroids, F1 (Raganato et al. framework)",
        "wsd_by_pos": "WSD on ALL w/o SE07 by part of speech, F1",
    },
    chart=ChartSpec(
        metrics=("F1",),
        datasets=("ALL",) + EVAL_SETS[:-1] + (PAPER_ALL,),
        breakdown=f"{BY_POS_SET}:",
        breakdown_label="part of speech",
        breakdown_ranked_on=DEV_SET,
        breakdown_retired=("ALL:",),  # per-POS rows on ALL (which holds SemEval-07), written until 2026-12-06
    ),
    options=(
        Option("semcor_limit", int, None, "train on the first N SemCor sentences only", positive=True, in_app=False),
        Option(
            "keys",
            str,
            None,
            "also write predictions as key files (Scorer.java input) in this directory",
            parse=key_dir,
            in_app=False,
        ),
        Option(
            "train",
            str,
            None,
            "training data: a framework XML file or a lexical-sample TSV (default: SemCor). " + TIE_RULE,
        ),
        Option("train_keys", str, None, "gold keys of --train XML (default NAME.gold.key.txt beside it)", in_app=False),
        Option("test", str, None, "evaluation data, same formats (default: ALL)"),
        Option("test_keys", str, None, "gold keys of --test XML (default NAME.gold.key.txt beside it)", in_app=False),
        Option(
            "format",
            str,
            None,
            "xml or tsv (default: from the file suffix, .xml or anything else)",
            choices=sources.FORMATS,
            in_app=False,
        ),
        Option(
            "folds",
            int,
            None,
            "k-fold cross-validation on --train (seeded by --seed) instead of --test",
            positive=True,
            in_app=False,
        ),
    ),
    baseline_models=BASELINE_MODELS,
    summary=wsd_summary,
    embeds=wsd_embeds,
    quick={"semcor_limit": QUICK_SEMCOR},
    inputs=(
        InputFile(
            "train",
            TSV,
            help="one occurrence per line: sentence<TAB>target word index (from 0)<TAB>"
            "label[<TAB>lemma]; framework XML + gold keys: use the command line "
            "(python -m probes wsd --train FILE.xml …)",
            companions=sources.keys_beside,
        ),
        InputFile(
            "test",
            TSV,
            required=False,
            if_absent={"folds": FOLDS},
            help=f"without it, {FOLDS}-fold cross-validation on the training file",
            companions=sources.keys_beside,
        ),
    ),
    preview=preview_files,
)
