"""POS tagging with a linear (softmax) probe on frozen representations, layer by layer.

Peters et al. (2018, Table 6) train a linear classifier on each biLM layer's frozen vectors and
report PTB tagging accuracy. Here: CoNLL-2000 train (WSJ 15–18) for training, CoNLL-2000 test
(WSJ 20) for accuracy, gold PTB tags, ``probes.estimators.classifier.LinearProbe`` (its learning rate halved
on a plateau of the held-out tenth's loss, ``--schedule``). The baseline is each word's majority tag.

This is the generic token-labelling probe (``probes.tasks.token_labels``, also behind ``python -m probes tag``)
on the built-in CoNLL-2000 files: a column file of the same sentences gives the same numbers
(tests/test_tag_probe.py), and the numbers of the code before it (tests/test_same_numbers.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from corpora.types import TaggedSentence
from probes.estimators import RIGOR_METRICS
from probes.layers import LayerSpec, as_layer_specs
from probes.registry import ChartSpec, Embeds, ProbeSpec, RunContext
from probes.results import ProbeResult
from probes.stats.units import interval_text, over_text
from probes.tasks.conll import DATASET, conll_slice, feature_key
from probes.tasks.datafiles import label_counts
from probes.tasks.rigor_options import RIGOR_OPTIONS, RigorOptions, check_rigor_options, family_probes
from probes.tasks.token_labels import TokenSplit, baseline_rows, run_layers

TEST_SET = "conll2000-test"
MAJORITY = "majority-tag"


def pos_split(name: str, key: str, sentences: list[TaggedSentence]) -> TokenSplit:
    return TokenSplit(name, key, [list(s.words) for s in sentences], np.array([t for s in sentences for t in s.pos]))


def conll_splits(limit: int | None) -> tuple[TokenSplit, TokenSplit]:
    """CoNLL-2000 train and test (first ``limit`` sentences) as the token probe reads them."""
    return (
        pos_split("conll2000-train", feature_key("train", limit), conll_slice("train", limit)),
        pos_split(TEST_SET, feature_key("test", limit), conll_slice("test", limit)),
    )


def conll_embeds(limit: int | None, options: dict | None = None) -> Embeds:
    """What a run on CoNLL-2000 embeds (``ProbeSpec.embeds``): train, then test."""
    return [(s.key, s.sentences) for s in conll_splits(limit)]


def run_pos_baseline(limit: int | None = None) -> ProbeResult:
    """Majority tag per word (unknown words: the most frequent tag), CoNLL-2000 train -> test."""
    train, test = conll_splits(limit)
    rows, extra = baseline_rows(train, [test])
    return ProbeResult(MAJORITY, "pos", rows, dataset=DATASET, params={"limit": limit}, extra=extra)


def pos_baselines(ctx: RunContext, **_options) -> list[ProbeResult]:
    return [run_pos_baseline(ctx.limit)]


def run_pos(
    embedder, layers: str | list[LayerSpec] | None = None, ctx: RunContext = RunContext(), **rigor_options
) -> ProbeResult:
    """Linear POS probe on every requested layer spec (indices, "mean", "mix:w…"): the generic token
    probe (``probes.tasks.token_labels``) on CoNLL-2000. ``rigor_options``: probe family, ``control``, ``mdl``
    (``probes.tasks.rigor_options``)."""
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    rigor = RigorOptions.from_options(rigor_options)
    train, test = conll_splits(ctx.limit)
    rows, extra = run_layers(embedder, specs, ctx, train, [test], what="POS probe", rigor=rigor)
    return ProbeResult(
        embedder.name,
        rigor.probe_name("pos"),
        rows,
        dataset=DATASET,
        fingerprint=embedder.fingerprint(),
        params={"layers": [s.label for s in specs], "limit": ctx.limit, "seed": ctx.seed, **rigor.params()},
        extra={**extra, **label_counts(train.labels.tolist(), test.labels.tolist())},  # a slice can miss a tag: said
    )


def pos_tables(df: pd.DataFrame, extras: list[dict]) -> dict[str, pd.DataFrame]:
    """``pos``: accuracy per model and layer; each other probe family a table of its own (``pos+mlp-256``)."""
    tables = {}
    for probe in family_probes(df, "pos"):
        pos = df[(df.probe == probe) & (df.metric == "accuracy")]
        if pos.empty:
            continue
        t = pos[["model", "layer", "value"]].rename(columns={"value": "accuracy (CoNLL-2000 test)"})
        t["95% CI"] = [interval_text(lo, hi) for lo, hi in zip(pos.lo, pos.hi)]
        t["CI over"] = [over_text(u, k, s, lo) for u, k, s, lo in zip(pos.unit, pos.clusters, pos.seeds, pos.lo)]
        tables[probe] = t.reset_index(drop=True)
    return tables


PROBE = ProbeSpec(
    name="pos",
    title="POS — linear probe (CoNLL-2000)",
    description="linear POS probe per layer (CoNLL-2000)",
    run=run_pos,
    baselines=pos_baselines,
    tables=pos_tables,
    table_titles={"pos": "POS tagging: linear probe per layer, accuracy on CoNLL-2000 test (WSJ 20)"},
    chart=ChartSpec(metrics=("accuracy", *RIGOR_METRICS[1:]), datasets=(TEST_SET, "conll2000-train")),
    options=RIGOR_OPTIONS,
    check_options=check_rigor_options,
    baseline_models={MAJORITY: "majority tag per word"},
    embeds=conll_embeds,
)
