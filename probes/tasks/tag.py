"""``tag``: a linear probe per layer for any token labelling in a user's files (POS, morphology, DEPREL, NER …).

    python -m probes tag --model minilm --train en_ewt-ud-train.conllu --test en_ewt-ud-test.conllu \\
        --column UPOS
    python -m probes tag --model minilm --train train.txt --test test.txt --format columns --column 2 --scheme bio

Files: CoNLL-U (``corpora.conllu``; ``--column`` UPOS, XPOS, DEPREL, LEMMA, feats:KEY, misc:KEY) or
CoNLL-style column files (``corpora.columns``; ``--column`` a field index, ``--word-column`` the
word's). The format follows the file name (``.conllu``) unless ``--format`` says. ``--dev`` is scored
like the test file (pick a layer on dev, report test); the probe's schedule watches a held-out tenth
of train, as in the built-in POS probe. ``--skip-label _`` leaves words with that label out of
training and scoring (e.g. ``feats:Number`` only on words that have a Number) — the model still
reads whole sentences. ``--scheme bio`` adds conlleval span F1 to token accuracy.

Per layer spec: accuracy (and span F1) on each evaluation file; the majority-label-per-word
baseline as its own result; the label set and counts in ``extra``. The core is
``probes.tasks.token_labels`` — the built-in POS probe is the same code on CoNLL-2000.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import numpy as np

from corpora.columns import iter_columns
from corpora.conllu import iter_conllu, parse_column
from corpora.format_errors import DataFormatError
from corpora.labelled import LabelledSentence
from probes.errors import ProbeInputError
from probes.estimators import RIGOR_METRICS
from probes.estimators.bio import bad_bio_label
from probes.inputs import Preview
from probes.layers import LayerSpec, as_layer_specs
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext
from probes.reporting.tables import dataset_tables
from probes.results import ProbeResult
from probes.tasks.datafiles import DataFiles, check_labels_seen, file_inputs, file_options, label_counts, read_roles
from probes.tasks.preview import token_preview
from probes.tasks.rigor_options import RIGOR_NAMES, RIGOR_OPTIONS, RigorOptions, check_rigor_options, family_probes
from probes.tasks.token_labels import TokenSplit, baseline_rows, run_layers

MAJORITY = "majority-label"
FORMATS = ("conllu", "columns")
SCHEMES = ("tag", "bio")
FILE_FORMATS = ("CoNLL-U", "column file")


def resolve(
    train=None,
    test=None,
    dev=None,
    format=None,
    column=None,
    word_column=0,
    scheme="tag",
    skip_label=None,
    name=None,
    probe: str = "tag",
) -> tuple[DataFiles, str, Callable[[Path], Iterator[LabelledSentence]]]:
    """The dataset, the task's name in rows ("UPOS", "col2", "feats:Number (not _)") and the file reader."""
    fmt = format or ("conllu" if Path(str(test or "")).suffix.lower() == ".conllu" else "columns")
    word_column = int(word_column or 0)
    files = DataFiles.checked(probe, train, test, dev, name, settings=f"{fmt}:{word_column if fmt == 'columns' else 1}")
    if fmt == "conllu":
        column = column or "UPOS"
        _, key = parse_column(files.test, column)
        what = column.upper() if key is None else f"{column.split(':')[0].lower()}:{key}"
        reader = partial(iter_conllu, column=what)
    else:
        column = -1 if column is None else column
        try:
            column = int(column)
        except ValueError:
            raise ProbeInputError(
                f"--column {column!r}: a column file's label column is a field index (0, 1, …; -1 for the last)."
            ) from None
        what = f"col{column}"
        reader = partial(iter_columns, label_column=column, word_column=word_column)
    if skip_label is not None:
        if scheme == "bio":
            raise ProbeInputError("--skip-label does not combine with --scheme bio (spans need every word's label).")
        what += f" (not {skip_label})"
    return files, what, reader


def _split(files: DataFiles, role: str, what: str, sents: list[LabelledSentence], skip) -> TokenSplit:
    labels = np.array([t for s in sents for t in s.labels])
    rows = None if skip is None else np.flatnonzero(labels != skip)
    if rows is not None:
        if len(rows) == 0:
            raise ProbeInputError(f"--{role} {files.paths()[role]}: every word has label {skip!r}; nothing to score.")
        labels = labels[rows]
    key = files.feature_key(role, files.limited)  # a limit that cut nothing: the full run's entry
    return TokenSplit(files.row_dataset(role, what), key, [list(s.words) for s in sents], labels, rows)


def load_splits(
    limit: int | None, scheme: str = "tag", skip_label=None, **options
) -> tuple[DataFiles, str, TokenSplit, list[TokenSplit]]:
    """Train and the evaluation splits (dev, test), every file read and checked first."""
    if scheme not in SCHEMES:
        raise ProbeInputError(f"--scheme {scheme!r}: choose tag or bio.")
    files, what, reader = resolve(scheme=scheme, skip_label=skip_label, **options)
    files, data = read_roles(files, reader, limit)
    if scheme == "bio":
        for role, sents in data.items():
            for s in sents:
                if (bad := bad_bio_label(s.labels)) is not None:
                    raise DataFormatError(
                        files.paths()[role],
                        s.line,
                        f"label {bad!r} in this sentence is not a "
                        "BIO tag (O, B-TYPE, I-TYPE; E-/S- for IOBES): --scheme bio needs one.",
                    )
    if skip_label is not None and not any(skip_label in s.labels for sents in data.values() for s in sents):
        found = Counter(label for sents in data.values() for s in sents for label in s.labels)
        raise ProbeInputError(  # a typo or another placeholder skipped nothing under a task named "(not X)"
            f"--skip-label {skip_label!r}: no word of the files has that label; the most frequent are "
            f"{', '.join(repr(label) for label, _ in found.most_common(8))}."
        )
    splits = {role: _split(files, role, what, sents, skip_label) for role, sents in data.items()}
    check_labels_seen(files, splits["train"].labels, {r: s.labels for r, s in splits.items() if r != "train"})
    return files, what, splits.pop("train"), list(splits.values())


def _params(files: DataFiles, ctx: RunContext, options: dict) -> dict:
    return {
        **{k: v for k, v in options.items() if k not in ("train", "dev", "test")},
        **{role: str(p) for role, p in files.paths().items()},
        "limit": files.limited,  # None where the limit cut nothing: the full run
        "seed": ctx.seed,
    }


def _task_options(options: dict) -> dict:
    """The options that choose the data and labels (the rigor options are the estimator's)."""
    return {k: v for k, v in options.items() if k not in RIGOR_NAMES}


def tag_embeds(limit: int | None, options: dict) -> Embeds:
    """What a run embeds (``ProbeSpec.embeds``): the training file, then the evaluation files."""
    _, _, train, evals = load_splits(limit, **_task_options(options))
    return [(s.key, s.sentences) for s in (train, *evals)]


def preview_files(limit: int, options: dict) -> Preview:
    """The app's preview: the files read as ``run_tag`` reads them."""
    files, what, train, evals = load_splits(limit, **_task_options(options))
    return Preview(
        files.label, f"label column {what}, first {limit} sentences of each file", *token_preview(train, evals)
    )


def run_tag(
    embedder, layers: str | list[LayerSpec] | None = None, ctx: RunContext = RunContext(), **options
) -> ProbeResult:
    """The linear probe on every requested layer spec, trained on --train, scored on --dev and --test.
    The rigor options (``probes.tasks.rigor_options``: probe family, control task, MDL) are checked first."""
    rigor = RigorOptions.from_options(options)
    options = _task_options(options)
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    files, what, train, evals = load_splits(ctx.limit, **options)
    rows, extra = run_layers(
        embedder,
        specs,
        ctx,
        train,
        evals,
        scheme=options.get("scheme") or "tag",
        what=f"tag probe ({what})",
        rigor=rigor,
    )
    return ProbeResult(
        embedder.name,
        rigor.probe_name("tag"),
        rows,
        dataset=files.label,
        fingerprint=embedder.fingerprint(),
        params={**_params(files, ctx, options), "layers": [s.label for s in specs], **rigor.params()},
        extra={**extra, **label_counts(train.labels.tolist(), evals[-1].labels.tolist()), "task": what},
    )


def tag_baselines(ctx: RunContext, **options) -> list[ProbeResult]:
    options = _task_options(options)
    files, what, train, evals = load_splits(ctx.limit, **options)
    rows, extra = baseline_rows(train, evals, options.get("scheme") or "tag")
    return [
        ProbeResult(
            MAJORITY,
            "tag",
            rows,
            dataset=files.label,
            params=_params(files, ctx, options),
            extra={**extra, "task": what},
        )
    ]


OPTIONS = file_options(FILE_FORMATS) + (
    Option("format", help="conllu or columns (default: conllu for *.conllu, else columns)", choices=FORMATS),
    Option(
        "column",
        help="label column: UPOS, XPOS, DEPREL, LEMMA, feats:KEY, misc:KEY (CoNLL-U, default UPOS) "
        "or a field index (column files, default -1 = last)",
    ),
    Option("word_column", type=int, default=0, help="column files: the word's field index (default 0)"),
    Option("scheme", default="tag", help="tag (token accuracy) or bio (also conlleval span F1)", choices=SCHEMES),
    Option("skip_label", help="leave words with this label out of training and scoring (e.g. _ for feats:KEY)"),
)

PROBE = ProbeSpec(
    name="tag",
    title="Tag — token labels from your files",
    description="linear probe per layer on your token-labelled files (CoNLL-U, column files)",
    run=run_tag,
    baselines=tag_baselines,
    tables=lambda df, extras: {k: t for p in family_probes(df, "tag") for k, t in dataset_tables(df, p).items()},
    table_titles={},
    chart=ChartSpec(metrics=("accuracy", "F1", *RIGOR_METRICS[1:])),
    options=OPTIONS + RIGOR_OPTIONS,
    check_options=check_rigor_options,
    baseline_models={MAJORITY: "majority label per word"},
    needs_files=True,
    inputs=file_inputs(FILE_FORMATS),
    preview=preview_files,
    embeds=tag_embeds,
)
