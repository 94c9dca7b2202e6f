"""One table of every dataset's counts (``python -m probes stats``; the app can show it too)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from corpora.conllu import iter_conllu
from corpora.lm_corpus import corpus_stats, load_lm_corpus
from corpora.paths import DataMissingError, data_path
from corpora.semcor import load_semcor
from corpora.wsd_eval import WSD_DATASETS, load_wsd_dataset
from corpora.wsj import load_conll2000, load_treebank

COLUMNS = ["dataset", "split", "files", "sentences", "tokens", "annotations", "dropped", "notes"]


def dataset_table(lm: bool = True, reading: Callable[[str], None] = lambda name: None) -> pd.DataFrame:
    """Counts of every dataset, one row per dataset/split (reads through the readers' caches; ``reading(name)`` is
    told before each is read: a first run parses every corpus, about a minute on 2 cores).

    ``annotations``: resolvable sense tags (SemCor), instances (WSD sets), tagged tokens (WSJ),
    vocabulary size (LM corpus). ``dropped``: SemCor tags that do not resolve in WordNet 3.0,
    Treebank ``-NONE-`` trace tokens left out.
    """
    rows: list[dict] = []
    reading("SemCor 3.0")
    sents, st = load_semcor()
    rows.append(
        dict(
            dataset="SemCor 3.0",
            split="brown1+brown2+brownv",
            files=st.files,
            sentences=st.sentences,
            tokens=st.tokens,
            annotations=st.resolved_tags,
            dropped=st.dropped_wnsn0 + st.dropped_unresolved,
            notes=(
                f"{st.sense_tags:,} tags: {st.dropped_wnsn0:,} wnsn=0 + {st.dropped_unresolved:,} not in WN 3.0 "
                f"dropped; {st.malformed_lines} malformed lines"
            ),
        )
    )
    for name in WSD_DATASETS:
        reading(f"WSD {name}")
        ds = load_wsd_dataset(name)
        n_inst = sum(len(s.instances) for s in ds.sentences)
        multi = sum(1 for i in ds.instances if len(i.gold_keys) > 1)
        rows.append(
            dict(
                dataset=f"WSD {name}",
                split="test",
                files=2,
                sentences=len(ds.sentences),
                tokens=sum(len(s.words) for s in ds.sentences),
                annotations=n_inst,
                notes=f"annotations = instances; {multi} with several keys",
            )
        )
    for split in ("train", "test"):
        reading(f"CoNLL-2000 {split}")
        data = load_conll2000(split)
        rows.append(
            dict(
                dataset="CoNLL-2000",
                split=split,
                files=1,
                sentences=len(data),
                tokens=sum(len(s.words) for s in data),
                annotations=sum(len(s.words) for s in data),
                notes="PTB POS + BIO chunks",
            )
        )
    reading("the Penn Treebank sample")
    tb, tb_all = load_treebank(), load_treebank(drop_traces=False)
    n_tok, n_all = sum(len(s.words) for s in tb), sum(len(s.words) for s in tb_all)
    rows.append(
        dict(
            dataset="Treebank sample",
            split="all",
            sentences=len(tb),
            tokens=n_tok,
            annotations=n_tok,
            dropped=n_all - n_tok,
            notes="PTB POS; -NONE- trace tokens dropped",
        )
    )
    reading("UD English EWT")
    rows += ud_ewt_rows()
    if lm:
        reading("the LM corpus")
        corpus = load_lm_corpus()
        cs = corpus_stats(corpus)
        rows.append(
            dict(
                dataset="LM corpus",
                split="train",
                sentences=cs["train_sentences"],
                tokens=cs["train_tokens"],
                annotations=cs["vocab_size"],
                notes=f"annotations = vocab (min count {corpus.min_count}); {len(corpus.sources)} sources",
            )
        )
        rows.append(
            dict(
                dataset="LM corpus",
                split="heldout",
                sentences=cs["heldout_sentences"],
                tokens=cs["heldout_tokens"],
                notes="1% of tokens, whole blocks of sentences",
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def ud_ewt_rows() -> list[dict]:
    """UD English EWT, streamed once per split; a split not in the data directory is a row saying so (the table
    named none: its absence was silent)."""
    rows = []
    for split in ("train", "dev", "test"):
        item = f"ud_english_ewt/en_ewt-ud-{split}.conllu"
        try:
            path = data_path(item)
        except DataMissingError:
            rows.append(
                dict(
                    dataset="UD English EWT",
                    split=split,
                    files=0,
                    notes=f"MISSING: {item} not in the data directory (the structural and head-syntax probes need it)",
                )
            )
            continue
        sents = words = 0
        for s in iter_conllu(path, "UPOS"):
            sents, words = sents + 1, words + len(s.words)
        rows.append(
            dict(
                dataset="UD English EWT",
                split=split,
                files=1,
                sentences=sents,
                tokens=words,
                annotations=words,
                notes="CoNLL-U: UPOS, XPOS, FEATS, DEPREL (python -m probes tag)",
            )
        )
    return rows


def format_table(df: pd.DataFrame) -> str:
    """Fixed-width text: text columns left-aligned, counts right-aligned with thousands separators."""
    numeric = ("files", "sentences", "tokens", "annotations", "dropped")
    cells = [[str(c) for c in df.columns]]
    for _, row in df.iterrows():
        cells.append(
            [
                (f"{int(row[c]):,}" if pd.notna(row[c]) else "")
                if c in numeric
                else ("" if pd.isna(row[c]) else str(row[c]))
                for c in df.columns
            ]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(df.columns))]
    lines = []
    for r in cells:
        parts = [v.rjust(w) if c in numeric else v.ljust(w) for v, w, c in zip(r, widths, df.columns)]
        lines.append("  ".join(parts).rstrip())
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)
