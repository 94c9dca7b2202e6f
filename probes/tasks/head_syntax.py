"""``head_syntax``: which attention heads find the syntactic head (Clark et al. 2019)? Every layer × head.

    python -m probes head_syntax --model minilm --limit 500          # UD English EWT dev, first 500 sentences
    python -m probes head_syntax --model minilm --test my.conllu --min-count 50

Data: UD English EWT dev (``--test``: any CoNLL-U file), read as trees (``corpora.conllu.iter_trees``). The
model's word-level attention (``Embedder.embed(..., with_attention=True)``: pieces pooled to words, special
tokens dropped, as the Attention page shows it) is computed here, not cached; nothing is trained.

Rows (``probes.estimators.head_syntax``): per relation with at least ``--min-count`` dependencies (and
``all``), per direction (``dep->head``, ``head->dep``) and per attention layer, the accuracy of the layer's
best head (``"head"``: its index) with a 95% interval resampling sentences. The baseline result
``offset-baseline``: the best fixed offset from the dependent (−3 … +3; ``"offset"``) on the same dependencies.
``extra["accuracy"]``: every head's accuracy, {direction: {relation: layers × heads}}; ``extra["best"]``: per
direction and relation the best head overall, the best offset and whether the head beats it.

Which head is "best" is a choice made on data. By default it is made on the scored sentences themselves, as
Clark et al. do (the maximum over 144 heads of a noisy accuracy is biased upwards). ``--select FILE`` chooses
every head (and the baseline's offset) on another treebank, e.g. EWT dev, and scores that choice on ``--test``:
the rows are then held-out accuracies. The selection file is part of the dataset's identity (``DataFiles``'
train role), so the two kinds of rows never share a table cell.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from corpora.conllu import DepTree, iter_trees
from corpora.paths import data_path
from probes.estimators.head_syntax import DIRECTIONS, OFFSETS, HeadCounts
from probes.inputs import InputFile, Preview
from probes.registry import ChartSpec, Embeds, Option, ProbeSpec, RunContext
from probes.reporting.tables import dataset_tables
from probes.results import ProbeResult
from probes.tasks.datafiles import DataFiles, read_file

NAME = "head_syntax"
OFFSET = "offset-baseline"
EWT_DEV = "ud_english_ewt/en_ewt-ud-dev.conllu"
CHUNK = 32  # sentences per embed call
SHOWN = ("all", "nsubj", "obj", "det", "amod", "case", "advmod", "aux", "mark", "compound")


def load_trees(limit: int | None, test=None, name=None, select=None) -> tuple[DataFiles, list[DepTree], list]:
    """The file (default: UD English EWT dev), its first ``limit`` trees and those of the selection file (the
    ``train`` role: the scored file itself when no ``select`` is given)."""
    path = test or data_path(EWT_DEV)
    files = DataFiles.checked(NAME, select or path, path, name=name, settings="conllu:1", flags={"train": "--select"})
    trees = read_file(iter_trees, files.test, limit)
    return files, trees, trees if select is None else read_file(iter_trees, files.train, limit)


def count_heads(embedder, trees: list[DepTree], ctx: RunContext) -> HeadCounts:
    """Every sentence's attention, argmaxed and counted (``embedder`` None: the offsets only)."""
    counts = HeadCounts(0, 0) if embedder is None else None
    for start in range(0, len(trees), CHUNK):
        part = trees[start : start + CHUNK]
        embs = [None] * len(part) if embedder is None else embedder.embed([list(t.words) for t in part], True)
        for emb, tree in zip(embs, part):
            att = None if emb is None else emb.attentions
            if counts is None:
                counts = HeadCounts(att.shape[0], att.shape[1])
            counts.add(att, tree)
        if ctx.progress is not None:
            ctx.progress(min(1.0, (start + CHUNK) / len(trees)), f"attention of {start + len(part)} sentences")
    return counts


def _dataset(files: DataFiles, direction: str, rel: str) -> str:
    return files.row_dataset("test", f"{direction}:{rel}")


def best_heads(counts: HeadCounts, rels: list[str], chooser: HeadCounts | None = None) -> dict:
    """Per direction and relation: the best head (layer from 1, head from 0) and the best offset, chosen on
    ``chooser`` (default: ``counts`` itself), with their accuracies on ``counts``."""
    chooser = chooser or counts
    out: dict = {}
    for direction in DIRECTIONS:
        for rel in rels:
            acc, off = counts.accuracy(direction, rel), counts.offset_accuracy(direction, rel)
            chosen = chooser.accuracy(direction, rel)
            layer, head = np.unravel_index(int(np.argmax(chosen)), chosen.shape)
            k = int(np.argmax(chooser.offset_accuracy(direction, rel)))
            out.setdefault(direction, {})[rel] = {
                "layer": int(layer) + 1,
                "head": int(head),
                "accuracy": round(float(acc[layer, head]), 2),
                "offset": OFFSETS[k],
                "offset_accuracy": round(float(off[k]), 2),
                "beats_offset": bool(acc[layer, head] > off[k]),
                "n": int(sum(counts.total[rel])),
            }
    return out


def _relations(counts: HeadCounts, chooser: HeadCounts, min_count: int) -> list[str]:
    """The scored file's relations with ``min_count`` dependencies that the selection file has too."""
    return [r for r in counts.relations(min_count) if sum(chooser.total.get(r, [])) > 0]


def run_head_syntax(
    embedder, layers=None, ctx: RunContext = RunContext(), test=None, name=None, min_count: int = 20, select=None
) -> ProbeResult:
    """Accuracy of every head per relation and direction; rows: each layer's best head (chosen on ``select``'s
    trees when given, else on the scored ones)."""
    PROBE.check_model(embedder)  # no attention: refused (``run_probe`` checks it first)
    t0 = time.perf_counter()
    files, trees, select_trees = load_trees(ctx.limit, test, name, select)
    counts = count_heads(embedder, trees, ctx)
    chooser = counts if select is None else count_heads(embedder, select_trees, ctx)
    rels = _relations(counts, chooser, min_count)
    rows = []
    for direction in DIRECTIONS:
        for rel in rels:
            chosen = chooser.accuracy(direction, rel)
            for layer in range(counts.layers):
                head = int(np.argmax(chosen[layer]))
                rows.append(counts.head_row(_dataset(files, direction, rel), direction, rel, layer, head, ctx.seed))
    accuracy = {d: {r: np.round(counts.accuracy(d, r), 2).tolist() for r in rels} for d in DIRECTIONS}
    return ProbeResult(
        embedder.name,
        NAME,
        rows,
        dataset=files.label,
        fingerprint=embedder.fingerprint(),
        params={
            "test": str(files.test),
            "limit": ctx.limit,
            "min_count": min_count,
            "seed": ctx.seed,
            "select": select,
        },
        extra={
            "accuracy": accuracy,
            "best": best_heads(counts, rels, chooser),
            "chosen_on": "the scored sentences" if select is None else str(files.train),
            # with --select, also the choice made on the scored sentences: how much peeking would have added
            "best_same_data": None if select is None else best_heads(counts, rels),
            "sentences": counts.sentences,
            "total_s": round(time.perf_counter() - t0, 1),
        },
    )


def offset_baselines(ctx: RunContext, test=None, name=None, min_count: int = 20, select=None) -> list[ProbeResult]:
    """The best fixed offset per relation and direction (chosen like the heads), on the same dependencies."""
    files, trees, select_trees = load_trees(ctx.limit, test, name, select)
    counts = count_heads(None, trees, ctx)
    chooser = counts if select is None else count_heads(None, select_trees, ctx)
    rows = [
        counts.offset_row(_dataset(files, d, rel), d, rel, ctx.seed, chooser)
        for d in DIRECTIONS
        for rel in _relations(counts, chooser, min_count)
    ]
    params = {"test": str(files.test), "limit": ctx.limit, "min_count": min_count, "select": select}
    return [ProbeResult(OFFSET, NAME, rows, dataset=files.label, params=params)]


def summary(result: ProbeResult) -> list[str]:
    """The command line's table: best head vs best offset for the common relations."""
    best = result.extra.get("best", {})
    lines = [
        {"direction": d, "relation": r, "best head": f"{b['layer']}.{b['head']}", "accuracy": b["accuracy"],
         "best offset": f"{b['offset']:+d}", "offset accuracy": b["offset_accuracy"], "n": b["n"]}
        for d, by_rel in best.items()
        for r, b in by_rel.items()
        if r in SHOWN
    ]  # fmt: skip
    return (
        []
        if not lines
        else [
            "best head (layer.head) per relation vs the best fixed offset:",
            pd.DataFrame(lines).to_string(index=False),
            "",
        ]
    )


def head_embeds(limit: int | None, options: dict) -> Embeds:
    """What a run embeds (``ProbeSpec.embeds``): the scored trees (then the selection file's), their attention
    never cached (key None)."""
    _, trees, select_trees = load_trees(limit, options.get("test"), options.get("name"), options.get("select"))
    chosen_apart = [] if options.get("select") is None else [(None, [list(t.words) for t in select_trees])]
    return [(None, [list(t.words) for t in trees]), *chosen_apart]


def preview_file(limit: int, options: dict) -> Preview:
    files, trees, _ = load_trees(limit, options.get("test"), options.get("name"))
    counts = count_heads(None, trees, RunContext(limit=limit, show_progress=False))
    rels = pd.DataFrame([{"relation": r, "dependencies": sum(counts.total[r])} for r in counts.relations()])
    n = pd.DataFrame([{"file": "test", "sentences": len(trees), "words": sum(len(t.words) for t in trees)}])
    sample = pd.DataFrame([{"sentence": " ".join(t.words)} for t in trees[:5]])
    return Preview(files.label, f"dependency trees, first {limit} sentences", n, rels, sample)


PROBE = ProbeSpec(
    trains=False,
    name=NAME,
    title="Head syntax — attention heads vs dependency heads (UD EWT)",
    description="Clark et al.'s attention-head syntax: does a head attend to the gold head? (per relation)",
    run=run_head_syntax,
    baselines=offset_baselines,
    tables=lambda df, extras: dataset_tables(df, NAME),
    table_titles={},
    chart=ChartSpec(metrics=("accuracy",)),
    options=(
        Option("test", help="CoNLL-U file (default: UD English EWT dev)"),
        Option("name", help="the dataset's name in results and tables (default: from the file name)"),
        Option("min_count", int, 20, "rows for relations with at least this many dependencies", positive=True),
        Option("select", help="CoNLL-U file to choose each head and offset on, scored on --test (held out)"),
    ),
    baseline_models={OFFSET: "best fixed offset (−3…+3)"},
    uses_layers=False,
    needs_attention=True,
    summary=summary,
    embeds=head_embeds,
    inputs=(InputFile("test", ("CoNLL-U",), required=False, help="dependency trees (default: UD EWT dev)"),),
    preview=preview_file,
    in_default_reproduce=False,
)
