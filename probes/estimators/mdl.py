"""MDL probing with the online code (Voita & Titov 2020, "Information-Theoretic Probing with Minimum
Description Length").

The description length of a task's labels given the representations is the number of bits a
sender needs to transmit the labels of the training data to a receiver who has the vectors. The
*online code* transmits the data in blocks: the first block with the uniform code (log2 K bits a
label), then each next block with a probe trained on everything sent so far:

    codelength = t_1·log2 K + Σ_{i=1}^{S-1} Σ_{n in block i+1} −log2 p_θi(y_n | x_n)
    compression = N·log2 K / codelength          (uniform code / online code; 1 = learnt nothing)

Blocks end at their schedule's fractions of the training *sentences* — 0.1, 0.2, 0.4, 0.8, 1.6,
3.2, 6.25, 12.5, 25, 50 and 100 % — after a seeded shuffle of the sentences, and each block's probe
is a fresh one, as in the authors' code (github.com/lena-voita/description-length-probing,
``control_tasks/run_experiment.py``). Differences, stated in every result's ``params``: the probe
is ours (``probes.estimators.families``; theirs is an MLP with 2 hidden layers of 1,000 and 40 epochs),
early stopping uses a held-out tenth of the data sent so far (they use the PTB dev set), and a
block's batch is at most a sixteenth of its training tokens (tiny first blocks still get steps).
K is the number of labels of the task's training data. A "kbit" is 1,024 bits, as in their
evaluation notebook (so our numbers compare with theirs).

    code = online_codelength(lambda **kw: LinearProbe(seed=0, **kw), X, y, offsets, seed=0)
    code.kbits, code.compression
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from probes.errors import ProbeInputError

#: Block ends, percent of the training sentences (Voita & Titov 2020, section 3.2.2).
SCHEDULE = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.25, 12.5, 25.0, 50.0, 100.0)
BITS_PER_KBIT = 1024
MIN_BATCH = 32

ProgressFn = Callable[[float, str], None]


@dataclass
class OnlineCode:
    """The online code of one task on one layer.

    bits: total codelength; uniform_bits: N·log2 K; blocks: per block {"sentences", "tokens", "bits"}
    (the first block's bits are its uniform code).
    """

    bits: float
    uniform_bits: float
    num_tokens: int
    num_classes: int
    blocks: list[dict] = field(default_factory=list)

    @property
    def kbits(self) -> float:
        return self.bits / BITS_PER_KBIT

    @property
    def compression(self) -> float:
        return self.uniform_bits / self.bits if self.bits > 0 else math.inf

    def rows(self, dataset: str, layer: str, prefix: str = "") -> list[dict]:
        """``{prefix}codelength_kbits`` and ``{prefix}compression`` rows (n = tokens coded)."""
        return [
            {
                "dataset": dataset,
                "layer": layer,
                "metric": f"{prefix}codelength_kbits",
                "value": round(self.kbits, 2),
                "n": self.num_tokens,
            },
            {
                "dataset": dataset,
                "layer": layer,
                "metric": f"{prefix}compression",
                "value": round(self.compression, 2),
                "n": self.num_tokens,
            },
        ]


def uniform_codelength(num_tokens: int, num_classes: int) -> float:
    """Bits of the uniform code: N·log2 K."""
    return num_tokens * math.log2(num_classes)


def block_ends(num_sentences: int, schedule: tuple[float, ...] = SCHEDULE) -> list[int]:
    """Sentence counts at which the blocks end (empty leading blocks of a tiny set are merged away)."""
    ends = sorted({int(f / 100 * num_sentences) for f in schedule} - {0})
    if len(ends) < 2 or ends[-1] != num_sentences:
        raise ProbeInputError(
            f"MDL needs at least two blocks of the schedule; {num_sentences} training "
            "sentences give fewer (use more sentences, e.g. a larger --limit)."
        )
    return ends


def online_codelength(
    make_probe: Callable[..., object],
    X: np.ndarray,
    y: np.ndarray,
    offsets: np.ndarray,
    *,
    classes: np.ndarray | None = None,
    seed: int = 0,
    schedule: tuple[float, ...] = SCHEDULE,
    progress: ProgressFn | None = None,
    show_progress: bool = False,
    desc: str = "MDL",
) -> OnlineCode:
    """The online codelength of labels ``y`` given vectors ``X``.

    make_probe: (**kwargs) -> unfitted estimator with fit / predict_log_proba and a ``classes_``
        order; it is called with ``classes`` and ``batch_size``.
    X: (N, d) token vectors; y: (N,) labels; offsets: (S + 1,) sentence boundaries in the token order.
    classes: the label set (default: the labels of ``y``); K = len(classes).
    progress / show_progress: a callback (fraction, message) and a tqdm bar over the blocks.
    """
    y = np.asarray(y)
    offsets = np.asarray(offsets)
    if len(X) != len(y) or int(offsets[-1]) != len(y):
        raise ValueError(f"{len(X)} vectors, {len(y)} labels and {int(offsets[-1])} tokens in the sentences.")
    classes = np.unique(y) if classes is None else np.unique(np.asarray(classes))
    num_sents = len(offsets) - 1
    ends = block_ends(num_sents, schedule)
    order = np.random.default_rng(seed).permutation(num_sents)
    lengths = np.diff(offsets)[order]
    tokens = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in order])
    token_ends = np.concatenate([[0], np.cumsum(lengths)])[ends]
    first = int(token_ends[0])
    total = uniform_codelength(first, len(classes))
    blocks = [{"sentences": ends[0], "tokens": first, "bits": round(total, 3)}]
    bar = tqdm(total=len(ends) - 1, unit="block", desc=desc, disable=not show_progress, leave=False)
    for i in range(len(ends) - 1):
        seen, block = tokens[: token_ends[i]], tokens[token_ends[i] : token_ends[i + 1]]
        if len(seen) == 0 or len(block) == 0:  # nothing sent yet (or to send): the uniform code
            bits = uniform_codelength(len(block), len(classes))
        else:
            batch = int(min(2048, max(MIN_BATCH, len(seen) // 16)))
            probe = make_probe(classes=classes, batch_size=batch).fit(X[seen], y[seen])
            log_p = probe.predict_log_proba(X[block])  # natural log, (B, K)
            cols = np.searchsorted(probe.classes_, y[block])
            bits = float(-log_p[np.arange(len(block)), cols].astype(np.float64).sum() / math.log(2))
        total += bits
        blocks.append({"sentences": ends[i + 1] - ends[i], "tokens": len(block), "bits": round(bits, 3)})
        bar.update(1)
        if progress is not None:
            progress((i + 1) / (len(ends) - 1), f"{desc}: block {i + 2}/{len(ends)}")
    bar.close()
    return OnlineCode(total, uniform_codelength(len(y), len(classes)), len(y), len(classes), blocks)
