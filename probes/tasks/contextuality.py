"""Contextuality per layer (Ethayarajh 2019): the ``contextuality`` probe (``probes.estimators.contextuality``).

    python -m probes contextuality --model minilm                       # SemCor's first 2000 sentences
    python -m probes contextuality --model gpt-small --words play,run,light --min-occurrences 3
    python -m probes contextuality --model minilm --corpus my_sentences.txt   # one sentence a line
    python -m probes reproduce --models glove-6b-50d,minilm --probes contextuality --out results/
    res = run_contextuality(load_embedder("minilm"), None, RunContext(limit=2000))
    res.rows   # {"dataset", "layer": "3", "metric": "self_similarity_adj", "value": 0.643, "lo": 0.638, "hi": 0.648, …}

The corpus is SemCor's first ``ctx.limit`` sentences (default 2000: every word, tagged or not; a multiword
token is its words) or a text file (``--corpus``: one sentence a line, words split at white space). A word
is its exact form (case kept); tokens without a letter or digit (punctuation) are never measured but stay
in the sentences the model sees. Features come from the feature cache (``features.extract``), so a second
run, or another seed, extracts nothing. Every layer of the model is measured (``--layers`` does not
apply); the anisotropy baselines are rows of the model's own result (``anisotropy``, ``mev_baseline``),
so the probe has no separate baseline results. The corpus file is its one input (``PROBE.inputs``,
optional; ``preview_corpus`` shows what it holds), so it is also a task of the app's upload tab.

Results and tables. A run is one ``ProbeResult`` per model (probe ``contextuality``), saved like every
probe's. ``PROBE.tables`` gives one model × layer table per measure (``contextuality_tables``, keys =
the metric names, titles ``TITLES``; each cell "value [lo, hi]"). Every row carries its 95% interval,
unit and number of units (``probes.estimators.contextuality``: words, sentences, or the baselines'
random pairs / sets, whose number the Monte-Carlo SE picks). The probe keeps a report of its own,
``PROBE.report`` = ``write_tables(runs, out)``: ``out/tables.md`` (three decimals, "—" for a layer a model
lacks, the command recorded in the results) and ``out/<metric>.csv`` (value, lo, hi, n, unit, clusters,
se per model and layer): docs/results/contextuality/ is rendered so from its ``runs/``. ``reproduce`` saves
its results under ``OUT/contextuality/runs``, calls ``PROBE.report(OUT/contextuality/runs, OUT/contextuality)``,
never touching ``OUT/tables.md``; not in ``reproduce``'s default probes (``in_default_reproduce=False``):
``--probes contextuality`` (or the rigor run: trained models only, ≤ ``DEFAULT_LIMIT`` sentences) asks for it.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from features.extract import get_features
from probes.errors import ProbeInputError, no_file
from probes.estimators.contextuality import METRICS, QUANTITY, layer_measures, select_words
from probes.inputs import InputFile, Preview
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext, no_baselines
from probes.reporting.tables import markdown_table, write_tables_files
from probes.results import ProbeResult, latest_rows, read_results
from probes.stats.units import value_interval_text
from probes.tasks.sentences import corpus_sentences, semcor_sentences

NAME = "contextuality"
DEFAULT_LIMIT = 2000
#: A row's n counts its words, sentences or pairs, each the unit of a mean: the default 1,000 words give intervals
#: ±0.001 to ±0.01 (docs/results/contextuality), so GloVe's 993 measured words are no small sample the way 993 test
#: instances of an accuracy are (``probes.stats.units.SMALL_N``); under 100, √10× wider, the charts say "small".
SMALL_UNITS = 100
TITLES = {
    "self_similarity_adj": "Self-similarity, adjusted for anisotropy (lower = more context-specific)",
    "intra_sentence_similarity_adj": "Intra-sentence similarity, adjusted for anisotropy",
    "explainable_variance_adj": "Maximum explainable variance, adjusted (MEV − MEV of random occurrences)",
    "anisotropy": "Anisotropy: mean cosine of random occurrence pairs",
    "self_similarity": "Self-similarity (raw)",
    "intra_sentence_similarity": "Intra-sentence similarity (raw)",
    "explainable_variance": "Maximum explainable variance (raw)",
    "mev_baseline": "MEV of random occurrence sets (size-matched baseline)",
}
assert set(TITLES) == set(METRICS) == set(QUANTITY)
CSV_COLUMNS = ["model", "dataset", "layer", "metric", "value", "lo", "hi", "n", "unit", "clusters", "se"]
SUMMARY_METRICS = ("self_similarity_adj", "intra_sentence_similarity_adj", "explainable_variance_adj", "anisotropy")


def word_key(word: str) -> str:
    """The word a token counts as: its exact form ("The" and "the" are two inputs, and a character-level
    layer 0 gives them two vectors); "" for punctuation (no letter or digit)."""
    return word if any(c.isalnum() for c in word) else ""


def corpus_of(limit: int | None, corpus: str | None) -> tuple[str, list[list[str]]]:
    """(dataset name, non-empty sentences) a run reads: ``corpus`` or SemCor, the first ``limit``
    (default ``DEFAULT_LIMIT``)."""
    limit = limit if limit is not None else DEFAULT_LIMIT
    dataset, sentences = corpus_sentences(corpus, limit) if corpus else semcor_sentences(limit)
    return dataset, [list(map(str, s)) for s in sentences if len(s)]


def embeds(limit: int | None, options: dict) -> Embeds:
    """What a run embeds (``ProbeSpec.embeds``): its corpus, under the key ``run_contextuality`` reads."""
    dataset, sentences = corpus_of(limit, options.get("corpus"))
    return [(feature_key(dataset), sentences)]


def feature_key(dataset: str) -> str:
    return f"contextuality-{dataset}"


def corpus_words(sentences: list[list[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets of the sentences, sentence of each row, word key of each row) of the concatenated words."""
    lengths = np.array([len(s) for s in sentences])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    keys = np.array([word_key(w) for s in sentences for w in s], dtype=object)
    return offsets, np.repeat(np.arange(len(sentences)), lengths), keys


def preview_corpus(limit: int, options: dict) -> Preview:
    """The app's preview (the upload tab): the sentences read and the words that would be measured."""
    corpus, opts = (
        options.get("corpus"),
        {
            k: options[k]
            for k in ("min_occurrences", "max_occurrences", "max_words", "words")
            if options.get(k) is not None
        },
    )
    dataset, sentences = corpus_sentences(corpus, limit) if corpus else semcor_sentences(limit)
    offsets, sentence_of_row, keys = corpus_words(sentences)
    try:
        selection = select_words(keys, sentence_of_row, **opts)
    except ValueError as exc:
        raise ProbeInputError(f"{dataset}: {exc}") from None
    counts = pd.DataFrame(
        [
            {
                "corpus": dataset,
                "sentences": len(sentences),
                "words": int(offsets[-1]),
                "words measured": len(selection.words),
            }
        ]
    )
    words = pd.DataFrame({"word": selection.words, "sentences": [len(r) for r in selection.rows]})
    sample = pd.DataFrame({"sentence": [" ".join(s) for s in sentences[:20]]})
    return Preview(
        dataset,
        f"the words that occur in at least {opts.get('min_occurrences', 5)} sentences of the first {limit}",
        counts,
        words,
        sample,
    )


def run_contextuality(
    embedder,
    layers=None,
    ctx: RunContext = RunContext(),
    *,
    corpus: str | None = None,
    words: list[str] | None = None,
    min_occurrences: int = 5,
    max_occurrences: int | None = 50,
    max_words: int | None = 1000,
    pairs: int = 2000,
) -> ProbeResult:
    """Every metric of ``probes.estimators.contextuality.METRICS`` at every layer of ``embedder`` (see the
    module doc); ``layers`` is unused (every layer is measured)."""
    t0 = time.perf_counter()
    limit = ctx.limit if ctx.limit is not None else DEFAULT_LIMIT
    dataset, sentences = corpus_of(limit, corpus)
    offsets, sentence_of_row, keys = corpus_words(sentences)
    try:
        selection = select_words(
            keys,
            sentence_of_row,
            min_occurrences=min_occurrences,
            max_occurrences=max_occurrences,
            max_words=max_words,
            words=words,
            seed=ctx.seed,
        )
    except ValueError as exc:
        raise ProbeInputError(f"{dataset}: {exc}") from None
    feats = get_features(
        embedder, feature_key(dataset), sentences, show_progress=ctx.show_progress, root=ctx.feature_root
    )
    t_feat = time.perf_counter() - t0
    ids = embedder.info.layer_ids or tuple(range(embedder.num_layers))
    rows, baselines = [], {}
    for j in range(embedder.num_layers):
        measures = layer_measures(np.asarray(feats.layer(j), dtype=np.float32), selection, offsets, min_pairs=pairs)
        rows += [{"dataset": dataset, "layer": str(ids[j]), "metric": m, **_rounded(measures[m])} for m in METRICS]
        baselines[str(ids[j])] = {m: measures[m]["clusters"] for m in ("anisotropy", "mev_baseline")}
        if ctx.progress is not None:
            ctx.progress((j + 1) / embedder.num_layers, f"layer {ids[j]}")
    occurrences = [len(r) for r in selection.rows]
    warning = _unmeasured(words, selection, keys, sentence_of_row, min_occurrences, dataset)
    return ProbeResult(
        embedder.name,
        NAME,
        rows,
        dataset=dataset,
        fingerprint=embedder.fingerprint(),
        params={
            "limit": limit if not corpus or dataset.endswith(f"-first{limit}") else None,  # a file left whole: none
            "seed": ctx.seed,
            "words": words,
            "min_occurrences": min_occurrences,
            "max_occurrences": max_occurrences,
            "max_words": max_words,
            "pairs": pairs,
        },
        extra={
            "sentences": len(sentences),
            "tokens": int(offsets[-1]),
            "words_measured": len(selection.words),
            "occurrences": int(sum(occurrences)),
            "median_occurrences": float(np.median(occurrences)),
            "baseline_draws": baselines,  # per layer: random pairs, random sets (the SE picks them)
            "example_words": list(selection.words[:20]),
            "feature_s": round(t_feat, 1),
            "total_s": round(time.perf_counter() - t0, 1),
            **({"warning": warning} if warning else {}),  # printed: a word asked for and not measured was unsaid
        },
    )


def _unmeasured(words, selection, keys, sentence_of_row, min_occurrences: int, dataset: str) -> str | None:
    """What to say of the words asked for (``--words``) and not measured, and why: too rare, or left out of the
    ``--max-words`` sample (the first ten of each named)."""
    missed = [w for w in dict.fromkeys(words or ()) if w not in selection.words]
    if not missed:
        return None
    rare = [w for w in missed if len(set(sentence_of_row[keys == w].tolist())) < min_occurrences]
    sampled_out = [w for w in missed if w not in rare]

    def named(ws: list[str]) -> str:
        return ", ".join(ws[:10]) + (f" and {len(ws) - 10:,} more" if len(ws) > 10 else "")

    parts = [f"{named(rare)}: in fewer than {min_occurrences} sentences of {dataset}"] if rare else []
    parts += [f"{named(sampled_out)}: left out of the --max-words sample"] if sampled_out else []
    return "; ".join(parts) + "; not measured."


def _rounded(measure: dict) -> dict:
    """A measure as a row: value, lo, hi to 4 decimals, se to 6 (None: not measurable)."""
    digits = {"value": 4, "lo": 4, "hi": 4, "se": 6}
    return {k: (None if np.isnan(v) else round(v, digits[k])) if k in digits else v for k, v in measure.items()}


def summary(res: ProbeResult) -> list[str]:
    """The command line's printout: the adjusted measures and the anisotropy per layer, with 95% intervals."""
    df = pd.DataFrame(res.rows).reindex(columns=["layer", "metric", "value", "lo", "hi"])
    df["cell"] = [value_interval_text(*v, digits=3) for v in zip(df["value"], df["lo"], df["hi"])]
    table = df.pivot_table(index="layer", columns="metric", values="cell", aggfunc="last", sort=False)
    cols = [c for c in SUMMARY_METRICS if c in table]
    return [f"{res.model}: value [95% interval]", table[cols].to_string()]


def contextuality_tables(df: pd.DataFrame, extras: list[dict] | None = None) -> dict[str, pd.DataFrame]:
    """metric → a model × layer table of "value [95% interval]" cells ("—": a layer the model lacks)."""
    df = df[df["probe"] == NAME]
    out = {}
    for metric in TITLES:
        sel = df[df["metric"] == metric]
        if sel.empty:
            continue
        sel = sel.assign(cell=[value_interval_text(*v, digits=3) for v in zip(sel["value"], sel["lo"], sel["hi"])])
        wide = sel.pivot_table(index=["model", "dataset"], columns="layer", values="cell", aggfunc="last")
        wide = wide[sorted(wide.columns, key=lambda c: int(c) if str(c).isdigit() else 10**6)].fillna("—")
        out[metric] = wide.reset_index().rename_axis(columns=None)
    return out


def write_tables(runs: Path, out: Path, command: str | None = None) -> Path:
    """``out/tables.md`` (value [95% interval] per model × layer) and ``out/<metric>.csv`` (one row per model
    and layer: value, lo, hi, n, unit, clusters, se) from the contextuality results in ``runs``; ``command``
    None: the command line the results record (when they all record the same one)."""
    results = [r for r in read_results(runs) if r.probe == NAME]
    if command is None:
        commands = {r.command for r in results}
        command = commands.pop() if len(commands) == 1 else ""
    tables = contextuality_tables(latest_rows(results)) if results else {}
    rows = pd.DataFrame([{"model": r.model, **row} for r in results for row in r.rows], columns=CSV_COLUMNS)
    rows = rows.drop_duplicates(["model", "dataset", "layer", "metric"], keep="last")
    lines = ["# Contextuality per layer (Ethayarajh 2019)", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [
        "Values in [−1, 1] (cosines) or [0, 1] (MEV); layer 0 is the input layer (a transformer's adds the position)."
        " Adjusted = measure − its anisotropy baseline at that layer (probes/estimators/contextuality.py). Each cell: "
        "value [95% interval]: bootstrap over the measured words (self-similarity, MEV) or sentences (intra-sentence "
        "similarity); the baselines' Monte-Carlo interval (SE < 0.0005: the CSVs' `se`).",
        "",
    ]
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for metric, table in tables.items():
        part = rows[rows["metric"] == metric].drop(columns="metric")
        files[f"{metric}.csv"] = part.dropna(axis=1, how="all").to_csv(index=False)
        lines += [f"## {TITLES[metric]}", "", markdown_table(table), ""]
    return write_tables_files(out, {**files, "tables.md": "\n".join(lines)})


def _words(raw) -> list[str] | None:
    """ "bank,play" (the command line) or a list (the app) -> the words; None: every word."""
    words = [w.strip() for w in (raw.split(",") if isinstance(raw, str) else raw) if str(w).strip()]
    return words or None


def _corpus(raw) -> str:
    if not Path(raw).is_file():
        raise no_file("--corpus", raw)
    return str(raw)


def _occurrences(flag: str):
    """The parser of ``flag`` (``--min-occurrences``, ``--max-occurrences``): a self-similarity needs a word's
    vectors in at least 2 sentences (with 1 every word was left unmeasured and the run ended without a word)."""

    def parse(raw) -> int:
        if int(raw) < 2:
            raise ProbeInputError(f"{flag}: a similarity needs a word in at least 2 sentences.")
        return int(raw)

    return parse


PROBE = ProbeSpec(
    name=NAME,
    title="Contextuality — Ethayarajh (2019) per layer (SemCor)",
    description="Ethayarajh (2019) contextuality per layer: self-similarity, intra-sentence similarity, MEV, adjusted",
    run=run_contextuality,
    baselines=no_baselines,
    tables=contextuality_tables,
    table_titles=TITLES,
    chart=ChartSpec(
        metrics=tuple(TITLES),
        y_range=(-1.0, 1.0),
        axis_titles=tuple(QUANTITY.items()),
        small_n=SMALL_UNITS,
        small_what="words, sentences or pairs (each row's unit)",
    ),
    trains=False,  # its seed draws the anisotropy baselines' random pairs, whose error its intervals carry
    options=(
        Option("words", default="", parse=_words, help="only these words (comma-separated), e.g. bank,play"),
        Option("corpus", parse=_corpus, help="a UTF-8 text file, one sentence a line (default: SemCor)"),
        Option(
            "min_occurrences",
            type=int,
            default=5,
            positive=True,
            parse=_occurrences("--min-occurrences"),
            help="sentences a word must occur in (default 5)",
        ),
        Option(
            "max_occurrences",
            type=int,
            default=50,
            positive=True,
            parse=_occurrences("--max-occurrences"),
            help="at most this many of a word's sentences (seeded sample, default 50)",
        ),
        Option(
            "max_words",
            type=int,
            default=1000,
            positive=True,
            help="at most this many words (seeded sample, default 1000)",
        ),
        Option(
            "pairs",
            type=int,
            default=2000,
            positive=True,
            help="at least this many random pairs for the anisotropy baseline (default 2000; more are drawn "
            "until its Monte-Carlo SE < 0.0005)",
        ),
    ),
    uses_layers=False,
    summary=summary,
    inputs=(
        InputFile(
            "corpus",
            ("text file, one sentence a line",),
            required=False,
            help="words split at white space; without it, SemCor",
        ),
    ),
    preview=preview_corpus,
    in_default_reproduce=False,
    report=write_tables,
    embeds=embeds,
)
