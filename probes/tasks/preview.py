"""What a user's files hold, as the probe will read them: counts per file, the label set, a sample.

The tables of each probe's ``preview_files`` (its ``ProbeSpec.preview``, a ``probes.inputs.Preview``),
which the app's upload tab shows before a run, so a wrong column or format is seen before any
vector is extracted. Pure pandas, no Streamlit.

    counts, labels, sample = token_preview(train, [dev, test])
    counts, labels, sample = sense_preview(read_lexical_sample(train), [read_lexical_sample(test)])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from probes.tasks.token_labels import TokenSplit

SKIPPED = "—"


def _role(split) -> str:
    return split.name.split(":")[1] if split.name.count(":") >= 2 else split.name


def label_table(train_labels, eval_labels, top: int = 40) -> pd.DataFrame:
    """label, train count, test count (the most frequent ``top`` training labels, then unseen test labels)."""
    tr, te = Counter(np.asarray(train_labels).tolist()), Counter(np.asarray(eval_labels).tolist())
    names = [k for k, _ in tr.most_common(top)] + [k for k in te if k not in tr]
    return pd.DataFrame({"label": names, "train": [tr.get(k, 0) for k in names], "test": [te.get(k, 0) for k in names]})


def token_preview(train: TokenSplit, evals: Sequence[TokenSplit], sample: int = 2) -> tuple[pd.DataFrame, ...]:
    """(counts per file, label table, the first ``sample`` training sentences word by word)."""
    counts = pd.DataFrame(
        [
            {
                "file": _role(s),
                "sentences": len(s.sentences),
                "words": int(s.offsets[-1]),
                "scored words": len(s.labels),
                "labels": len(set(s.labels.tolist())),
            }
            for s in [train, *evals]
        ]
    )
    flat = np.full(int(train.offsets[-1]), SKIPPED, dtype=object)
    flat[train.rows if train.rows is not None else slice(None)] = train.labels
    off = train.offsets
    rows = [
        {"sentence": i + 1, "word": w, "label": flat[off[i] + j]}
        for i, sent in enumerate(train.sentences[:sample])
        for j, w in enumerate(sent)
    ]
    return counts, label_table(train.labels, evals[-1].labels), pd.DataFrame(rows)


def span_preview(train, evals, sample: int = 8) -> tuple[pd.DataFrame, ...]:
    """The same for span files (``probes.tasks.span.SpanSplit``): counts, labels, the first targets and their text."""
    counts = pd.DataFrame(
        [
            {
                "file": _role(s),
                "sentences": len(s.sentences),
                "words": sum(map(len, s.sentences)),
                "targets": len(s.labels),
                "labels": len(set(s.labels.tolist())),
            }
            for s in [train, *evals]
        ]
    )
    rows = pd.DataFrame({"span text": train.texts[:sample], "label": train.labels[:sample]})
    return counts, label_table(train.labels, evals[-1].labels), rows


def sense_preview(train, evals, sample: int = 8) -> tuple[pd.DataFrame, ...]:
    """The same for lexical-sample items (``corpora.lexical_sample.LexicalItem``): counts per file,
    labels (evaluated on the last file, or on train itself under k-fold), the first occurrences."""
    files = [("train", train), *(("test", items) for items in evals)]
    counts = pd.DataFrame(
        [
            {
                "file": role,
                "occurrences": len(items),
                "targets": len({it.lemma for it in items}),
                "labels": len({it.label for it in items}),
            }
            for role, items in files
        ]
    )
    scored = evals[-1] if evals else train
    rows = pd.DataFrame(
        [
            {"line": it.line, "target": it.words[it.index], "label": it.label, "sentence": " ".join(it.words)}
            for it in train[:sample]
        ]
    )
    return counts, label_table([it.label for it in train], [it.label for it in scored]), rows
