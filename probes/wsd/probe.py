"""The WSD probe end to end: SemCor sense centroids per layer -> the five all-words sets and ALL.

Rows: F1/P/R per evaluation set, ALL and ALL without SemEval-07 (the paper's column), and F1 per
POS on ALL (``ALL:NOUN``…). The baseline is WordNet's first sense. Features come from the feature
cache with only the scored tokens' rows stored (SemCor: ~27% of its words; the model still sees
whole sentences).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from corpora import wordnet
from probes import paper
from probes.errors import ProbeInputError, check_positive
from probes.features import get_features
from probes.layers import LayerSpec, as_layer_specs, needed_layers
from probes.registry import ChartSpec, Option, ProbeSpec, RunContext
from probes.results import ProbeResult
from probes.wsd.data import eval_slice, semcor_view
from probes.wsd.estimator import NearestSenseWSD, first_sense_predictions
from probes.wsd.layout import build_layout, eval_word_pieces
from probes.wsd.scoring import EVAL_LABELS, EVAL_SETS, PAPER_ALL, score, score_by_pos, write_key_file

DATASET = "semcor→ALL"
FIRST_SENSE = "wordnet-1st-sense"


def evaluate_predictions(instances, preds: list[str | None], label: str) -> list[dict]:
    """Result rows (F1/P/R per set and ALL, F1 per POS on ALL) for one layer spec."""
    rows = []
    golds = [inst.gold_keys for inst in instances]
    sets = [inst.id.split(".")[0] for inst in instances]
    for name in EVAL_SETS + (PAPER_ALL,):
        if name == "ALL":
            idx = list(range(len(instances)))
        elif name == PAPER_ALL:
            idx = [i for i, s in enumerate(sets) if s != "semeval2007"]
        else:
            idx = [i for i, s in enumerate(sets) if s == name]
        if not idx:
            continue
        sc = score([preds[i] for i in idx], [golds[i] for i in idx])
        for metric in ("F1", "P", "R"):
            rows.append({"dataset": name, "layer": label, "metric": metric, "value": round(sc[metric], 2),
                         "n": sc["n"]})
    for tag, sc in score_by_pos(preds, golds, [inst.pos for inst in instances]).items():
        rows.append({"dataset": f"ALL:{tag}", "layer": label, "metric": "F1", "value": round(sc["F1"], 2),
                     "n": sc["n"]})
    return rows


def _instances(limit: int | None):
    check_positive(limit, "--limit")
    sentences = eval_slice(limit)
    instances = [inst for s in sentences for inst in s.instances]
    if not instances:
        raise ProbeInputError("No WSD evaluation instances in this slice.")
    return sentences, instances


def run_first_sense(limit: int | None = None, keys: str | Path | None = None) -> ProbeResult:
    """The WordNet first-sense baseline on the evaluation sets (no embeddings)."""
    _, instances = _instances(limit)
    preds = first_sense_predictions([i.lemma for i in instances], [i.pos for i in instances])
    if keys is not None:
        write_key_file(Path(keys) / "wordnet-first-sense.key.txt", [i.id for i in instances], preds)
    return ProbeResult(FIRST_SENSE, "wsd", evaluate_predictions(instances, preds, "first-sense"), dataset=DATASET,
                       params={"limit": limit})


def wsd_baselines(ctx: RunContext, keys: str | Path | None = None, **_options) -> list[ProbeResult]:
    return [run_first_sense(ctx.limit, keys)]


def run_wsd(embedder, layers: str | list[LayerSpec] | None = None, ctx: RunContext = RunContext(),
            semcor_limit: int | None = None, keys: str | Path | None = None) -> ProbeResult:
    """1-NN WSD for every requested layer spec.

    ``ctx.limit``: first N sentences of SemCor and of each evaluation set; ``semcor_limit`` overrides
    it for SemCor only. ``keys``: also write each spec's predictions as a key file there.
    """
    specs = as_layer_specs(layers, embedder.num_layers, embedder.info.layer_ids)
    check_positive(semcor_limit, "--semcor-limit")
    t0 = time.perf_counter()
    sem_limit = semcor_limit if semcor_limit is not None else ctx.limit
    ev_sents, instances = _instances(ctx.limit)
    # "-tagged" / "-instances" keep these row-restricted entries apart from whole-sentence ones.
    sem_layout, sem_keep, sem_keys, num_sem_sents = semcor_view(sem_limit)
    ev_keep, ev_layout = build_layout([[eval_word_pieces(w) for w in s.words] for s in ev_sents],
                                      [[inst.index for inst in s.instances] for s in ev_sents]).restrict()
    needed = needed_layers(specs, embedder.num_layers)
    progress = ctx.progress
    suffix = "" if ctx.limit is None else f"-limit{ctx.limit}"
    sem_suffix = "" if sem_limit is None else f"-limit{sem_limit}"
    sem_feats = get_features(embedder, f"semcor-tagged{sem_suffix}", sem_layout.sentences, needed, keep=sem_keep,
                             progress=ctx.sub_progress(0.0, 0.8), show_progress=ctx.show_progress, root=ctx.feature_root)
    ev_feats = get_features(embedder, f"wsd-ALL-instances{suffix}", ev_layout.sentences, needed, keep=ev_keep,
                            progress=ctx.sub_progress(0.8, 0.9), show_progress=ctx.show_progress, root=ctx.feature_root)
    t_feat = time.perf_counter() - t0

    lemmas, poses = [i.lemma for i in instances], [i.pos for i in instances]
    ids = [i.id for i in instances]
    # WordNet lookups once per lemma+POS (not per instance and layer spec), from the on-disk inventory.
    inventory = wordnet.sense_inventory(zip(lemmas, poses))

    def new_probe() -> NearestSenseWSD:
        return NearestSenseWSD(senses_fn=lambda lemma, pos: inventory[(lemma, pos)],
                               first_sense_fn=lambda lemma, pos: next(iter(inventory[(lemma, pos)]), None),
                               device=ctx.device)

    def key_file(label: str) -> Path | None:
        return None if keys is None else Path(keys) / f"{embedder.name}-{label.replace(':', '_')}.key.txt"

    singles = {s.index: s for s in specs if s.is_single}
    combos = {s.label: s.weights(embedder.num_layers) for s in specs if not s.is_single}
    acc: dict[str, list[torch.Tensor]] = {}   # weighted sums of (semcor, eval) token vectors
    rows, coverage = [], {}
    for j in needed:
        Xs = sem_layout.token_vectors(sem_feats.layer(j))
        Xe = ev_layout.token_vectors(ev_feats.layer(j))
        if j in singles:
            wsd = new_probe().fit(Xs, sem_keys)
            preds = wsd.predict(Xe, lemmas, poses)
            rows += evaluate_predictions(instances, preds, singles[j].label)
            if not coverage:   # the same for every layer: one sense inventory, one set of seen senses
                coverage = {"senses": len(wsd.sense_index_),
                            "instances_with_seen_sense": int(sum(bool(wsd.candidates(l, p))
                                                                 for l, p in zip(lemmas, poses)))}
            if keys is not None:
                write_key_file(key_file(f"layer{j}"), ids, preds)
        for label, w in combos.items():   # in place, multi-threaded: SemCor is ~226k x dim per layer
            if label not in acc:
                acc[label] = [torch.zeros(Xs.shape), torch.zeros(Xe.shape)]
            acc[label][0].add_(torch.from_numpy(Xs), alpha=float(w[j]))
            acc[label][1].add_(torch.from_numpy(Xe), alpha=float(w[j]))
        if progress is not None:
            progress(0.9 + 0.1 * (needed.index(j) + 1) / len(needed), f"WSD layer {j}")
    for label in combos:
        wsd = new_probe().fit(acc[label][0].numpy(), sem_keys)
        preds = wsd.predict(acc[label][1].numpy(), lemmas, poses)
        rows += evaluate_predictions(instances, preds, label)
        if keys is not None:
            write_key_file(key_file(label), ids, preds)
    return ProbeResult(
        embedder.name, "wsd", rows, dataset=DATASET, fingerprint=embedder.fingerprint(),
        params={"layers": [s.label for s in specs], "limit": ctx.limit, "semcor_limit": semcor_limit},
        extra={"semcor_sentences": num_sem_sents, "semcor_tokens": sem_keys.num_tokens,
               "eval_instances": len(instances), "feature_s": round(t_feat, 1),
               "total_s": round(time.perf_counter() - t0, 1), **coverage})


def wsd_tables(df: pd.DataFrame, extras: list[dict]) -> dict[str, pd.DataFrame]:
    """WSD F1 per (model, layer) and evaluation set with the paper's Table 5 beside; F1 per POS on ALL."""
    tables = {}
    sets = EVAL_SETS + (PAPER_ALL,)
    wsd = df[(df.probe == "wsd") & (df.metric == "F1") & (df.dataset.isin(sets))]
    if wsd.empty:
        return tables
    t = wsd.pivot_table(index=["model", "layer"], columns="dataset", values="value", aggfunc="last")
    t = t[[c for c in sets if c in t.columns]].rename(columns=EVAL_LABELS).reset_index()
    t["paper (same column as ALL w/o SE07)"] = [
        paper.fmt(paper.WSD_TABLE5["WordNet 1st Sense Baseline"]) if m == FIRST_SENSE
        else "biLM L1 67.4, L2 69.0; CoVe L1 59.4, L2 64.7" for m in t["model"]]
    tables["wsd"] = t
    by_pos = df[(df.probe == "wsd") & (df.metric == "F1") & (df.dataset.str.startswith("ALL:"))]
    if not by_pos.empty:
        p = by_pos.pivot_table(index=["model", "layer"], columns="dataset", values="value", aggfunc="last")
        p.columns = [c.split(":")[1] for c in p.columns]
        tables["wsd_by_pos"] = p[[c for c in ("NOUN", "VERB", "ADJ", "ADV") if c in p.columns]].reset_index()
    return tables


PROBE = ProbeSpec(
    name="wsd",
    title="WSD — 1-NN word senses (SemCor → Senseval/SemEval)",
    description="1-nearest-neighbour word sense disambiguation per layer (SemCor -> SE2..SE15, ALL)",
    run=run_wsd,
    baselines=wsd_baselines,
    tables=wsd_tables,
    table_titles={"wsd": "WSD: 1-NN on SemCor sense centroids, F1 (Raganato et al. framework)",
                  "wsd_by_pos": "WSD on ALL by part of speech, F1"},
    chart=ChartSpec(metrics=("F1",), datasets=("ALL",) + EVAL_SETS[:-1] + (PAPER_ALL,), breakdown="ALL:",
                    breakdown_label="part of speech"),
    options=(Option("semcor_limit", int, None, "train on the first N SemCor sentences only", positive=True),
             Option("keys", str, None, "also write predictions as key files (Scorer.java input) in this directory")),
    baseline_models={FIRST_SENSE: "WordNet 1st sense"},
)
