"""Where a WSD run's instances come from: one ``WsdSplit`` per training or evaluation set.

A split is what the runner needs of a dataset, whatever its file format: the piece layout of its
instances (restricted to their rows, for the feature cache), their gold labels, lemma, POS and id,
the evaluation split each belongs to, and a feature-cache key that names the data and its content:

    builtin_train(limit)                 SemCor's tagged tokens (cached view; key "semcor-tagged[-limitN]")
    builtin_test(limit)                  ALL, instances grouped by their set (key "wsd-ALL-instances[-limitN]")
    file_split(path, keys, fmt, limit)   a framework XML + key pair or a lexical-sample TSV
                                         (name "<file>@<content hash>", key "wsd-<name>-instances[-limitN]")

``limit`` keeps the first N sentences (XML; of each set for ALL) or lines (TSV).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpora.digests import content_fingerprint
from corpora.format_errors import DataFormatError
from corpora.lexical_sample import LexicalItem, iter_lexical_sample
from corpora.types import WsdSentence
from corpora.wsd_eval import default_key_file, read_wsd_files
from probes.errors import ProbeInputError, no_file
from probes.tasks.wsd.data import eval_slice, semcor_view
from probes.tasks.wsd.estimator import SenseAssignments
from probes.tasks.wsd.layout import PieceLayout, build_layout, eval_word_pieces
from probes.tasks.wsd.scoring import BY_POS_SET, set_groups

FORMATS = ("xml", "tsv")


@dataclass
class WsdSplit:
    """The instances of one dataset as the runner reads them.

    name:        the dataset as rows and results name it ("ALL", "mydata.tsv@1a2b3c4d").
    layout/keep: pieces fed to the model, restricted to the instances' rows (``PieceLayout.restrict``).
    labels:      gold labels of every instance (training: what the centroids are built from).
    lemmas/poses/ids: per instance (None for SemCor, whose inventory is WordNet's).
    groups:      evaluation split name -> instance indices, in row order.
    by_pos:      the split whose instances are also scored per universal POS (None: no breakdown).
    words:       (lexical samples) the target word of each instance: its lemma column, else its word form
                 lower-cased; ``unlemmatised`` instances had no lemma column.
    by_word:     the split whose instances are also scored per target word (None: no breakdown).
    """

    name: str
    layout: PieceLayout
    keep: np.ndarray
    feature_key: str
    labels: SenseAssignments
    lemmas: list[str] | None
    poses: list[str] | None
    ids: list[str]
    groups: dict[str, list[int]]
    by_pos: str | None
    sentences: int
    has_pos: bool = True
    words: list[str] | None = None
    unlemmatised: int = 0
    by_word: str | None = None

    def __len__(self) -> int:
        return self.labels.num_tokens

    @property
    def golds(self) -> list[tuple[str, ...]]:
        """Gold labels per instance (from ``labels``)."""
        out: list[list[str]] = [[] for _ in range(self.labels.num_tokens)]
        for t, s in zip(self.labels.token, self.labels.sense):
            out[int(t)].append(self.labels.keys[int(s)])
        return [tuple(g) for g in out]

    @property
    def targets(self) -> list[tuple[str, str]]:
        if self.lemmas is None or self.poses is None:
            raise ValueError(f"{self.name}: no lemmas/POS per instance.")
        return list(zip(self.lemmas, self.poses))


def _suffix(limit: int | None) -> str:
    return "" if limit is None else f"-limit{limit}"


def _feature_key(name: str, limit: int | None) -> str:
    """The feature-cache key of a user dataset: its name and content hash, the slice (a plain file name)."""
    return "wsd-" + re.sub(r"[^\w.@+-]", "_", name) + f"-instances{_suffix(limit)}"


def builtin_train(limit: int | None) -> WsdSplit:
    """SemCor's sense-tagged tokens (the first ``limit`` sentences)."""
    layout, keep, keys, num = semcor_view(limit)
    return WsdSplit(
        "semcor",
        layout,
        keep,
        f"semcor-tagged{_suffix(limit)}",
        keys,
        None,
        None,
        [],
        {"semcor": list(range(keys.num_tokens))},
        None,
        num,
    )


def _from_sentences(sentences: Sequence[WsdSentence]) -> tuple:
    instances = [inst for s in sentences for inst in s.instances]
    keep, layout = build_layout(
        [[eval_word_pieces(w) for w in s.words] for s in sentences],
        [[inst.index for inst in s.instances] for s in sentences],
    ).restrict()
    labels = SenseAssignments.from_keys([inst.gold_keys for inst in instances])
    return instances, keep, layout, labels


def builtin_test(limit: int | None) -> WsdSplit:
    """ALL (first ``limit`` sentences of each set): rows per set, ALL, ALL without SE07, POS on ALL without SE07."""
    sentences = eval_slice(limit)
    instances, keep, layout, labels = _from_sentences(sentences)
    if not instances:
        raise ProbeInputError("No WSD evaluation instances in this slice.")
    sets = [inst.id.split(".")[0] for inst in instances]
    groups = set_groups(sets)
    return WsdSplit(
        "ALL",
        layout,
        keep,
        f"wsd-ALL-instances{_suffix(limit)}",
        labels,
        [i.lemma for i in instances],
        [i.pos for i in instances],
        [i.id for i in instances],
        groups,
        BY_POS_SET,
        len(sentences),
    )


def guess_format(path: Path) -> str:
    return "xml" if path.suffix.lower() == ".xml" else "tsv"


def dataset_name(files: Sequence[Path]) -> str:
    """``<first file's name>@<content hash of the files>``: two datasets never share a name."""
    base = files[0].name
    base = base[: -len(".data.xml")] if base.endswith(".data.xml") else base
    return f"{base}@{content_fingerprint(files)[:8]}"


def _check_file(path: Path, flag: str) -> None:
    if not path.is_file():
        raise no_file(flag, path)


def keys_beside(path: Path) -> tuple[Path, ...]:
    """The gold-key file ``file_split`` reads beside a framework XML when no ``--*-keys`` names one (any file's: an
    XML read with ``--format xml`` need not end in .xml; a key file beside a TSV is hashed, though never read)."""
    return (default_key_file(path),)


def file_split(
    path: str | Path,
    keys: str | Path | None = None,
    fmt: str | None = None,
    limit: int | None = None,
    flag: str = "--train",
) -> WsdSplit:
    """A dataset from files: framework XML (+ gold keys, default ``NAME.gold.key.txt`` beside it) or TSV."""
    path = Path(path)
    _check_file(path, flag)
    fmt = fmt or guess_format(path)
    if fmt not in FORMATS:
        raise ProbeInputError(f"--format {fmt!r}: choose from {', '.join(FORMATS)}.")
    if fmt == "xml":
        if keys:  # named: a file that is not there is that option's error, not the XML's
            key_path = Path(keys).expanduser()
            _check_file(key_path, f"{flag}-keys")
        else:
            key_path = default_key_file(path)
            if not key_path.is_file():
                raise DataFormatError(
                    path,
                    None,
                    f"XML without gold keys: no key file {key_path.name} beside it; give one with {flag}-keys FILE",
                )
        ds = read_wsd_files(path, key_path)
        name = dataset_name([path, key_path])
        sentences = [s for s in ds.sentences if s.instances][:limit]
        instances, keep, layout, labels = _from_sentences(sentences)
        return WsdSplit(
            name,
            layout,
            keep,
            _feature_key(name, limit),
            labels,
            [i.lemma for i in instances],
            [i.pos for i in instances],
            [i.id for i in instances],
            {name: list(range(len(instances)))},
            name,
            len(sentences),
        )
    if keys:
        raise ProbeInputError(f"{flag}-keys applies to --format xml; a TSV holds its labels.")
    items: list[LexicalItem] = []
    for item in iter_lexical_sample(path):
        if limit is not None and len(items) >= limit:
            break
        items.append(item)
    return lexical_split(dataset_name([path]), items, limit)


#: A lexical-sample lemma column such as ``bank.n`` (Senseval's naming) gives the target's POS.
LEMMA_POS = {"n": "NOUN", "v": "VERB", "a": "ADJ", "s": "ADJ", "r": "ADV"}


def split_lemma(lemma: str) -> tuple[str, str]:
    """``bank.n`` -> ("bank", "NOUN"); a lemma without a POS suffix -> (lemma, "")."""
    base, dot, letter = lemma.rpartition(".")
    return (base, LEMMA_POS[letter]) if dot and base and letter in LEMMA_POS else (lemma, "")


def lexical_split(name: str, items: Sequence[LexicalItem], limit: int | None = None) -> WsdSplit:
    """A split of lexical-sample items: one sentence per line, its target the one instance. When every
    lemma carries a POS suffix (``bank.n``) the instances have a POS (WordNet inventory possible)."""
    keep, layout = build_layout([[[w] for w in it.words] for it in items], [[it.index] for it in items]).restrict()
    labels = SenseAssignments.from_keys([(it.label,) for it in items])
    targets = [split_lemma(it.lemma) for it in items]  # per line: a line without a suffix has no POS
    has_pos = all(pos for _, pos in targets)
    return WsdSplit(
        name,
        layout,
        keep,
        _feature_key(name, limit),
        labels,
        [t[0] for t in targets],
        [t[1] for t in targets],
        [f"line{it.line}" for it in items],
        {name: list(range(len(items)))},
        None,
        len(items),
        has_pos=has_pos,
        words=[it.lemma for it in items],
        unlemmatised=sum(not it.lemma_given for it in items),
    )
