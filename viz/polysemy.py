"""Logic of the Polysemy explorer: occurrences of a word, their vectors, senses and neighbours.

    index = build_lemma_index(sentences)                      # once per process
    occs, total = semcor_occurrences(sentences, index, "bank", pos="noun", cap=150)
    X = occurrence_vectors(embed_fn, occs)                    # (layers, len(occs), dim)

A SemCor multiword token (``river_bank``) is fed to the models as its pieces, and its vector is
the mean over the pieces, as in the WSD probe.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from corpora.types import SemcorSentence
from probes.estimators.contextuality import word_profile
from viz.projection import cosine_neighbours, nn_label_agreement
from viz.text import ParsedText

POS_CODES = {"noun": ("1",), "verb": ("2",), "adjective": ("3", "5"), "adverb": ("4",)}
POS_CHOICES = ("any", *POS_CODES)
SUGGESTED_WORDS = ("bank", "play", "interest", "run", "line", "power", "state", "light")


@dataclass(frozen=True)
class Occurrence:
    words: tuple[str, ...]  # the sentence as fed to a model
    start: int  # target span [start, end) in ``words``
    end: int
    keys: tuple[str, ...] = ()  # WordNet sense keys (SemCor), () for typed sentences
    label: str | None = None  # user label for typed sentences
    source: str = ""  # "brown1/br-a01 s12" or "typed line 3"
    ref: tuple[int, int] | None = None  # SemCor (sentence index, token index): its corpus-search row

    @property
    def target(self) -> str:
        return " ".join(self.words[self.start : self.end])

    def context(self, width: int = 8) -> str:
        left = " ".join(self.words[max(0, self.start - width) : self.start])
        right = " ".join(self.words[self.end : self.end + width])
        pre = "… " if self.start > width else ""
        post = " …" if self.end + width < len(self.words) else ""
        return f"{pre}{left} [{self.target}] {right}{post}".strip()

    @property
    def group(self) -> str | None:
        """What the point is coloured by: the first sense key, else the user label."""
        return self.keys[0] if self.keys else self.label


def key_pos(key: str) -> str:
    """Part of speech of a WordNet sense key ``lemma%ss_type:…`` (1 noun, 2 verb, 3/5 adj, 4 adv)."""
    try:
        code = key.split("%", 1)[1][0]
    except IndexError:
        return "?"
    return next((p for p, codes in POS_CODES.items() if code in codes), "?")


def build_lemma_index(sentences: Sequence[SemcorSentence]) -> dict[str, list[tuple[int, int]]]:
    """lower-cased lemma -> [(sentence index, token index)] of sense-tagged tokens."""
    index: dict[str, list[tuple[int, int]]] = {}
    for si, sent in enumerate(sentences):
        for ti, tok in enumerate(sent.tokens):
            if tok.sense_keys and tok.lemma:
                index.setdefault(tok.lemma.lower(), []).append((si, ti))
    return index


def _expand(sent: SemcorSentence, ti: int) -> tuple[tuple[str, ...], int, int]:
    words: list[str] = []
    start = end = 0
    for j, tok in enumerate(sent.tokens):
        if j == ti:
            start = len(words)
        words.extend(tok.pieces)
        if j == ti:
            end = len(words)
    return tuple(words), start, end


#: The most occurrences a scatter draws (a seeded sample of more): the Polysemy slider's top, an upload's cap.
MAX_OCCURRENCES = 300


def semcor_occurrences(
    sentences: Sequence[SemcorSentence],
    index: dict[str, list[tuple[int, int]]],
    lemma: str,
    pos: str = "any",
    cap: int = MAX_OCCURRENCES,
    seed: int = 0,
) -> tuple[list[Occurrence], int]:
    """Sense-tagged occurrences of ``lemma`` (optionally one POS), a seeded sample of at most ``cap``.

    Returns (occurrences in corpus order, total number available before sampling).
    """
    if pos not in POS_CHOICES:
        raise ValueError(f"Unknown part of speech '{pos}'; choose one of {', '.join(POS_CHOICES)}.")
    lemma = lemma.strip().lower().replace(" ", "_")
    hits = index.get(lemma, [])
    if pos != "any":
        hits = [(si, ti) for si, ti in hits if key_pos(sentences[si].tokens[ti].sense_keys[0]) == pos]
    total = len(hits)
    if total > cap:
        hits = sorted(random.Random(seed).sample(hits, cap))
    occs = []
    for si, ti in hits:
        sent = sentences[si]
        words, start, end = _expand(sent, ti)
        occs.append(
            Occurrence(
                words,
                start,
                end,
                keys=tuple(sent.tokens[ti].sense_keys),
                source=f"{sent.doc} s{sent.snum}",
                ref=(si, ti),
            )
        )
    return occs, total


def word_forms(word: str) -> set[str]:
    """Lower-cased surface forms matched in typed sentences: the word and simple inflections."""
    w = word.lower()
    forms = {w, w + "s", w + "es", w + "ed", w + "d", w + "ing", w + "'s"}
    if w.endswith("e"):
        forms |= {w[:-1] + "ing"}
    if w.endswith("y"):
        forms |= {w[:-1] + "ies", w[:-1] + "ied"}
    if len(w) > 2 and w[-1] not in "aeiouwxy" and w[-2] in "aeiou":
        forms |= {w + w[-1] + "ed", w + w[-1] + "ing"}
    return forms


def typed_occurrences(parsed: ParsedText, word: str) -> tuple[list[Occurrence], int]:
    """Occurrences of ``word`` (or a simple inflection) in typed sentences.

    Every match in a line is an occurrence. Returns (occurrences, number of lines without it).
    """
    forms = word_forms(word)
    occs: list[Occurrence] = []
    missing = 0
    for li, (words, label) in enumerate(zip(parsed.sentences, parsed.labels or [None] * len(parsed.sentences))):
        found = False
        for wi, w in enumerate(words):
            if w.lower() in forms:
                occs.append(Occurrence(tuple(words), wi, wi + 1, label=label, source=f"typed line {li + 1}"))
                found = True
        missing += not found
    return occs, missing


EmbedFn = Callable[[list[list[str]]], list[np.ndarray]]


def occurrence_vectors(embed_fn: EmbedFn, occs: Sequence[Occurrence]) -> np.ndarray:
    """(layers, len(occs), dim): each occurrence's vector (mean over its pieces) at every layer.

    ``embed_fn`` maps sentences to per-sentence (layers, words, dim) arrays; every distinct
    sentence is embedded once.
    """
    if not occs:
        raise ValueError("No occurrences to embed.")
    uniq: dict[tuple[str, ...], int] = {}
    for o in occs:
        uniq.setdefault(o.words, len(uniq))
    outs = embed_fn([list(s) for s in uniq])
    vecs = [outs[uniq[o.words]][:, o.start : o.end].mean(axis=1) for o in occs]
    return np.stack(vecs, axis=1).astype(np.float32)


#: What the 1-NN curve's error bars are (the chart's caption and CSV say it): each occurrence's outcome counts as one
#: independent trial, which leave-one-out neighbours are not quite, so the interval is approximate.
AGREEMENT_INTERVAL = "approximate 95% intervals (Wilson, each occurrence one trial)"


def layer_agreement(X: np.ndarray, groups: Sequence[str | None]) -> pd.DataFrame:
    """Per layer: how often an occurrence's nearest other occurrence has the same sense.

    Columns: layer, 1-NN same sense, chance (probability that a random other occurrence shares
    the sense: Σ c(c−1) / n(n−1)), n (occurrences with a sense), lo, hi (the 1-NN fraction's
    :data:`AGREEMENT_INTERVAL`).
    """
    labels = list(groups)
    known = [g for g in labels if g is not None]
    n = len(known)
    counts: dict[str, int] = {}
    for g in known:
        counts[g] = counts.get(g, 0) + 1
    chance = sum(c * (c - 1) for c in counts.values()) / (n * (n - 1)) if n > 1 else float("nan")
    rows = []
    for layer in range(X.shape[0]):
        agreement = nn_label_agreement(X[layer], labels)
        ci = binomtest(round(agreement * n), n).proportion_ci(method="wilson") if n > 1 else None
        rows.append(
            {
                "layer": layer,
                "1-NN same sense": agreement,
                "chance": chance,
                "n": n,
                "lo": ci.low if ci else float("nan"),
                "hi": ci.high if ci else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def separability_problem(groups: Sequence[str | None]) -> str | None:
    """Why a per-layer "same sense as the nearest neighbour" curve would say nothing, or None.

    With fewer than two labels nothing is compared; when no label has two occurrences no occurrence can
    have a same-sense neighbour, so the curve is 0 at every layer whatever the model does.
    """
    counts: dict[str, int] = {}
    for g in groups:
        if g is not None:
            counts[g] = counts.get(g, 0) + 1
    if len(counts) < 2:
        return "Only one sense (or label) among these occurrences: there is nothing to separate."
    if max(counts.values()) < 2:
        return (
            f"Each of the {len(counts)} senses (or labels) has a single occurrence, so no occurrence can have "
            "a same-sense neighbour and the curve would be 0 at every layer whatever the model does. "
            "Give at least two sentences per label (or pick a word with more occurrences)."
        )
    return None


def layer_measures(X: np.ndarray, occs: Sequence[Occurrence], *, with_agreement: bool = True) -> pd.DataFrame:
    """Per layer, long (layer, measure, value[, n, lo, hi]): 1-NN same sense with its interval and chance
    (``layer_agreement``), and how
    contextual the layer is for this word (Ethayarajh 2019, ``probes.estimators.contextuality.word_profile``):
    self-similarity and explainable variance, over one occurrence per distinct sentence."""
    parts = []
    if with_agreement:
        agreement = layer_agreement(X, [o.group for o in occs])
        long = agreement.melt(id_vars="layer", value_vars=["1-NN same sense", "chance"], var_name="measure")
        parts.append(long.merge(agreement[["layer", "n", "lo", "hi"]].assign(measure="1-NN same sense"), how="left"))
    one_per_sentence = sorted({o.words: i for i, o in enumerate(occs)}.values())
    if len(one_per_sentence) >= 2:
        prof = word_profile(X[:, one_per_sentence])
        layers = np.arange(X.shape[0])
        parts.append(pd.DataFrame({"layer": layers, "measure": "self-similarity", "value": prof["self_similarity"]}))
        parts.append(
            pd.DataFrame({"layer": layers, "measure": "explainable variance", "value": prof["explainable_variance"]})
        )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["layer", "measure", "value"])


def neighbour_table(
    X_layer: np.ndarray, occs: Sequence[Occurrence], i: int, k: int, sense_name: Callable[[str | None], str]
) -> pd.DataFrame:
    """The ``k`` occurrences nearest (cosine, full dimension) to occurrence ``i``."""
    me = occs[i].group
    rows = []
    for j, sim in cosine_neighbours(X_layer, i, k):
        g = occs[j].group
        rows.append(
            {
                "cosine": round(sim, 4),
                "same sense": "✓" if (g is not None and g == me) else ("?" if g is None or me is None else "✗"),
                "context": occs[j].context(len(occs[j].words)),  # the whole sentence: a CSV keeps it all
                "sense": sense_name(g),
                "source": occs[j].source,
            }
        )
    return pd.DataFrame(rows)
