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
``control_tasks/run_experiment.py``). Differences from their code: the probe
is ours (``probes.estimators.families``; theirs is an MLP with 2 hidden layers of 1,000 and 40 epochs);
early stopping uses a held-out tenth of the data sent so far (they use the PTB dev set); each block's
probe stops on held-out *accuracy* (patience 2, at most 10 epochs), where they keep the checkpoint with
the lowest dev *log-loss* (patience 4, learning rate halved on a plateau, up to 40 epochs); and a
block's batch is a sixteenth of all the tokens sent so far (the held-out tenth included), at least 32
and at most 2,048 (``auto_batch``: 3,000 tokens sent give a batch of 187), so tiny first blocks still
get steps. Stopping on held-out log-loss instead, measured once on slices (data order 0; a report-only
audit's script, 2026-12-07, the 2-core VM, not kept in ``bench/``), shortened
glove-6b-50d on 2,000 sentences from 75.27 to 72.42 kbits (−3.8 %) and elmo-small on 1,500 sentences
from 15.61 to 14.43 kbits on layer 1 (−7.6 %) and from 16.79 to 15.72 on layer 2 (−6.4 %); layer 1
stayed shorter than layer 2 under both rules on that slice. The committed numbers use the accuracy rule, and the
token probes' MDL rows keep it (``PROBE_SCHEDULE``, given to each block's probe) when their own accuracy probes moved
to the plateau schedule (2026-12-07, ``probes.estimators.classifier``): their codelengths stay comparable with the
committed ones, and a switch to the plateau rule is a rerun of every MDL row, not done yet.
K is the number of labels of the task's training data. Our codelengths are in bits throughout and a
"kbit" is 1,024 bits. Voita & Titov's published kbits are not in that unit: their code sums blocks 2+
as PyTorch cross-entropy in *nats*, adds the first block's uniform code in bits and divides by 1,024
(their notebook's layer 1: 96.02 kbits, compression 53.06; in bits it would be about
4.83 + 91.19 × 1.4427 ≈ 136 kbits, compression ≈ 37). Compare orderings and ratios with theirs, not values.

    code = online_codelength(lambda **kw: LinearProbe(seed=0, schedule=PROBE_SCHEDULE, **kw), X, y, offsets, seed=0)
    code.kbits, code.compression

**Data orders and uncertainty.** The codelength depends on the order in which the sentences are sent
(another shuffle moved elmo-small's layer 0 from 116.4 to 128.4 kbits, issue 26), so a measurement is K
data orders (``online_codelengths``, ``ORDERS`` = 3 by default; order 0 is the one-order shuffle of ``seed``,
order k ≥ 1 the shuffle of ``order_seed(seed, k)``). Rows report the mean codelength over the orders and
the compression of that mean, with a 95% interval that combines the orders: the Student t-interval of the
mean over K orders (mean ± t₀.₉₇₅,K−1 · s/√K), widened where needed to contain every order's own value
(for K ≤ 4 the t-interval always does), and for compression the same interval mapped through
N·log2 K / codelength. Rows carry unit "data order", clusters = K and every order's value ("orders");
one order gives no interval (lo/hi None). An ordering of two codelengths (e.g. layer 1 codes POS shorter
than layer 0) is claimed only if it holds in every order: ``shorter_in_all_orders(a, b)``.

    new = lambda **kw: LinearProbe(seed=0, schedule=PROBE_SCHEDULE, **kw)
    codes = online_codelengths(new, X, y, offsets, orders=3, seed=0)
    codes.rows("conll2000-train", "1")   # mean kbits [lo, hi] over 3 orders, compression likewise
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import t as student_t
from tqdm.auto import tqdm

from probes.errors import ProbeInputError
from probes.estimators.classifier import EARLY_STOP, auto_batch
from probes.progress import ProgressFn, scaled
from probes.stats.intervals import LEVEL

PROBE_SCHEDULE = EARLY_STOP  # how each block's probe trains (module docstring)
#: Block ends, percent of the training sentences (Voita & Titov 2020, section 3.2.2).
SCHEDULE = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.25, 12.5, 25.0, 50.0, 100.0)
BITS_PER_KBIT = 1024


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


def check_labels(count: int) -> None:
    """ProbeInputError for training data of fewer than two labels: log2 1 = 0, so every code is 0 bits and the
    compression 0/0 (``RigorOptions.check_data`` asks before any extraction; the estimator keeps the guard)."""
    if count < 2:
        raise ProbeInputError(
            f"MDL needs at least two labels; this training data has {count}: with one label there is nothing to "
            "transmit."
        )


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
        order; it is called with ``classes`` and ``batch_size`` (and ``fit`` with ``progress=`` when
        ``progress`` is given: ``LinearProbe.fit``).
    X: (N, d) token vectors; y: (N,) labels; offsets: (S + 1,) sentence boundaries in the token order.
    classes: the label set (default: the labels of ``y``); K = len(classes).
    progress / show_progress: a callback (fraction, message: the block, and each block's probe's epochs) and a
        tqdm bar over the blocks.
    """
    y = np.asarray(y)
    offsets = np.asarray(offsets)
    if len(X) != len(y) or int(offsets[-1]) != len(y):
        raise ValueError(f"{len(X)} vectors, {len(y)} labels and {int(offsets[-1])} tokens in the sentences.")
    classes = np.unique(y) if classes is None else np.unique(np.asarray(classes))
    check_labels(len(classes))
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
            probe = make_probe(classes=classes, batch_size=auto_batch(len(seen)))  # the block seen, held-out tenth too
            told = scaled(
                progress, i / (len(ends) - 1), (i + 1) / (len(ends) - 1), f"{desc}: block {i + 2}/{len(ends)}: "
            )
            probe = probe.fit(X[seen], y[seen]) if told is None else probe.fit(X[seen], y[seen], progress=told)
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


#: Data orders of an MDL measurement (issue 26: a codelength moves by ~10 % with the order).
ORDERS = 3
ORDER_UNIT = "data order"  # the unit of an MDL row's interval: its K data orders


def order_seed(seed: int, k: int) -> int:
    """The shuffle seed of data order k: order 0 is ``seed`` itself (the one-order result), the others are
    drawn from (seed, k) so they never coincide with another run's order 0."""
    return seed if k == 0 else int(np.random.SeedSequence([seed, k]).generate_state(1)[0])


def order_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """The t-interval of the mean over K ≥ 2 orders, widened to every order's value (NaN, NaN for K = 1)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 2:
        return float("nan"), float("nan")
    half = student_t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(min(v.mean() - half, v.min())), float(max(v.mean() + half, v.max()))


@dataclass
class OrderedCodes:
    """One task's online code on one layer under K data orders (``online_codelengths``).

    kbits: the mean codelength over orders; its interval ``order_interval`` of the orders' codelengths;
    compression: N·log2 K / the mean codelength, its interval the same map of the codelength interval (so
    each order's own compression lies in it too).
    """

    codes: list[OnlineCode]

    @property
    def orders_kbits(self) -> np.ndarray:
        return np.array([c.kbits for c in self.codes])

    @property
    def kbits(self) -> float:
        return float(self.orders_kbits.mean())

    @property
    def compression(self) -> float:
        return self.codes[0].uniform_bits / (self.kbits * BITS_PER_KBIT)

    @property
    def blocks(self) -> list[list[dict]]:
        return [c.blocks for c in self.codes]

    @property
    def num_classes(self) -> int:
        return self.codes[0].num_classes

    def rows(self, dataset: str, layer: str, prefix: str = "") -> list[dict]:
        """``{prefix}codelength_kbits`` and ``{prefix}compression`` rows: the means, n = tokens coded, the
        interval over orders (lo/hi None for one order), unit "data order", clusters = K, and each order's value."""
        lo, hi = order_interval(self.orders_kbits)
        uniform = self.codes[0].uniform_bits / BITS_PER_KBIT
        bounds = {"codelength_kbits": (lo, hi), "compression": (uniform / hi, uniform / lo)}
        per_order = {"codelength_kbits": self.orders_kbits, "compression": [c.compression for c in self.codes]}
        out = []
        for metric, value in (("codelength_kbits", self.kbits), ("compression", self.compression)):
            b = [None if np.isnan(x) else round(float(x), 2) for x in bounds[metric]]
            out.append(
                {
                    "dataset": dataset,
                    "layer": layer,
                    "metric": prefix + metric,
                    "value": round(value, 2),
                    "n": self.codes[0].num_tokens,
                    "lo": b[0],
                    "hi": b[1],
                    "unit": ORDER_UNIT,
                    "clusters": len(self.codes),
                    "orders": [round(float(x), 2) for x in per_order[metric]],
                }
            )
        return out


def online_codelengths(
    make_probe: Callable[..., object],
    X: np.ndarray,
    y: np.ndarray,
    offsets: np.ndarray,
    *,
    orders: int = ORDERS,
    seed: int = 0,
    progress: ProgressFn | None = None,
    desc: str = "MDL",
    **kwargs,
) -> OrderedCodes:
    """``online_codelength`` under ``orders`` data orders (shuffle seeds ``order_seed(seed, k)``)."""
    if orders < 1:
        raise ProbeInputError(f"MDL needs at least one data order, got {orders}.")
    return OrderedCodes(
        [
            online_codelength(
                make_probe,
                X,
                y,
                offsets,
                seed=order_seed(seed, k),
                progress=scaled(progress, k / orders, (k + 1) / orders, f"order {k + 1}/{orders}: "),
                desc=f"{desc} order {k + 1}/{orders}",
                **kwargs,
            )
            for k in range(orders)
        ]
    )


def shorter_in_all_orders(a: OrderedCodes | Sequence[float], b: OrderedCodes | Sequence[float]) -> bool:
    """Whether ``a``'s codelength is below ``b``'s in every data order (paired: the same orders, same data
    size); a claim "a codes the labels shorter than b" needs this, not only the means. ``a``, ``b``: codes, or
    their per-order kbits (a result row's ``"orders"``)."""
    a_kbits, b_kbits = (np.asarray(x.orders_kbits if isinstance(x, OrderedCodes) else x, float) for x in (a, b))
    if a_kbits.shape != b_kbits.shape:
        raise ValueError(f"Orderings compare the same data orders ({a_kbits.size} vs {b_kbits.size}).")
    return bool(np.all(a_kbits < b_kbits))
