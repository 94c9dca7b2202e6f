"""1-nearest-neighbour word sense disambiguation of Peters et al. (2018, section 5.3).

A sense embedding for every SemCor 3.0 sense key is the mean of the contextual vectors of its
tagged tokens (a multiword token such as ``Fulton_County_Grand_Jury`` is fed to the model as its
pieces and represented by the mean of their vectors). An evaluation instance takes the nearest
(cosine) sense among the WordNet senses of its lemma+POS that were seen in SemCor; when none was
seen it backs off to WordNet's first sense. Scores follow the unified evaluation framework of
Raganato et al. (2017) and its ``Scorer.java``: P = correct/answered, R = correct/total, F1; an
instance with several gold keys is correct when the answer is any of them.

    wsd = NearestSenseWSD().fit(X_semcor, keys_semcor)          # X: (num_tokens, dim)
    pred = wsd.predict(X_eval, lemmas, poses)                    # list of sense keys (or None)
    score(pred, [inst.gold_keys for inst in instances])          # {"P", "R", "F1", ...}
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from models.base import default_device

log = logging.getLogger(__name__)

#: The framework's five test sets, in the paper's order, then their concatenation.
EVAL_SETS = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015", "ALL")
EVAL_LABELS = {"senseval2": "SE2", "senseval3": "SE3", "semeval2007": "SE07", "semeval2013": "SE13",
               "semeval2015": "SE15", "ALL": "ALL", "ALL-noSE07": "ALL w/o SE07"}
#: Peters et al. (2018, Table 5) report the four test sets of Raganato et al. (2017a) together:
#: ALL without SemEval-07 (their development set). WordNet's first sense scores 65.9 there.
PAPER_ALL = "ALL-noSE07"
UPOS = ("NOUN", "VERB", "ADJ", "ADV")


# ----------------------------------------------------------------------------- scoring

def score(predictions: Sequence[str | None], golds: Sequence[Sequence[str]]) -> dict:
    """Framework scoring of one answer (or None = no answer) per instance.

    Returns {"P", "R", "F1"} in percent plus counts n (instances), answered, correct.
    """
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold instances.")
    n = len(golds)
    answered = sum(p is not None for p in predictions)
    correct = sum(p is not None and p in set(g) for p, g in zip(predictions, golds))
    p = correct / answered if answered else 0.0
    r = correct / n if n else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"P": 100 * p, "R": 100 * r, "F1": 100 * f1, "n": n, "answered": answered, "correct": correct}


def score_by_pos(predictions: Sequence[str | None], golds: Sequence[Sequence[str]],
                 poses: Sequence[str]) -> dict[str, dict]:
    """``score`` restricted to each universal POS present (NOUN, VERB, ADJ, ADV)."""
    out = {}
    for tag in UPOS:
        idx = [i for i, p in enumerate(poses) if p == tag]
        if idx:
            out[tag] = score([predictions[i] for i in idx], [golds[i] for i in idx])
    return out


def write_key_file(path: Path, ids: Sequence[str], predictions: Sequence[str | None]) -> Path:
    """The framework's key format, one ``id key`` line per answered instance (input to Scorer.java)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for i, p in zip(ids, predictions):
            if p is not None:
                fh.write(f"{i} {p}\n")
    return path


# ----------------------------------------------------------------------------- the probe

@dataclass(frozen=True)
class SenseAssignments:
    """Which tagged token belongs to which sense, built once per corpus and shared by every layer's fit.

    keys:  (num_senses,) sense key of each centroid row, in order of first occurrence
    token: (num_pairs,) token index of each (token, sense) pair (a token with several keys has several)
    sense: (num_pairs,) centroid row of each pair
    """

    keys: tuple[str, ...]
    token: np.ndarray
    sense: np.ndarray
    num_tokens: int

    @classmethod
    def from_keys(cls, sense_keys: Sequence[Sequence[str]]) -> "SenseAssignments":
        index: dict[str, int] = {}
        token, sense = [], []
        for i, keys in enumerate(sense_keys):
            for k in keys:
                token.append(i)
                sense.append(index.setdefault(k, len(index)))
        return cls(tuple(index), np.asarray(token, np.int64), np.asarray(sense, np.int64), len(sense_keys))


class NearestSenseWSD:
    """Sense centroids from SemCor, nearest-centroid prediction restricted to the lemma's senses.

    Args:
        senses_fn: (lemma, upos) -> candidate sense keys in WordNet order
            (default ``corpora.wordnet.senses``).
        first_sense_fn: (lemma, upos) -> WordNet first-sense key or None
            (default ``corpora.wordnet.first_sense_key``).
        device: torch device for the matrix products (default: CUDA when present).
        batch_size: instances per matrix product in ``predict``.
        tie_tol: cosines within this of the best count as ties, resolved in WordNet sense order.
    """

    def __init__(self, senses_fn: Callable[[str, str], Sequence[str]] | None = None,
                 first_sense_fn: Callable[[str, str], str | None] | None = None,
                 device: str | torch.device | None = None, batch_size: int = 2048,
                 tie_tol: float = 1e-5) -> None:
        if senses_fn is None or first_sense_fn is None:
            from corpora import wordnet

            senses_fn = senses_fn or (lambda lemma, pos: [s.key for s in wordnet.senses(lemma, pos)])
            first_sense_fn = first_sense_fn or wordnet.first_sense_key
        self.senses_fn = senses_fn
        self.first_sense_fn = first_sense_fn
        self.device = torch.device(device) if device is not None else default_device()
        self.batch_size = batch_size
        self.tie_tol = tie_tol
        self.sense_index_: dict[str, int] = {}
        self.centroids_: torch.Tensor | None = None   # (num_senses, dim), L2-normalised
        self.counts_: np.ndarray | None = None

    def fit(self, X: np.ndarray, sense_keys: Sequence[Sequence[str]] | SenseAssignments) -> "NearestSenseWSD":
        """X: (num_tokens, dim) vectors of SemCor tagged tokens; sense_keys[i]: that token's keys
        (or a prebuilt :class:`SenseAssignments` of them, to share across layers).

        A token with several keys contributes to each of their centroids.
        """
        a = sense_keys if isinstance(sense_keys, SenseAssignments) else SenseAssignments.from_keys(sense_keys)
        if len(X) != a.num_tokens:
            raise ValueError(f"{len(X)} vectors for {a.num_tokens} tokens.")
        if not len(a.token):
            raise ValueError("No sense-tagged tokens to fit on (empty SemCor slice?).")
        self.sense_index_ = {k: i for i, k in enumerate(a.keys)}
        X_t = torch.as_tensor(np.asarray(X, dtype=np.float32), device=self.device)
        tok = torch.as_tensor(a.token, device=self.device)
        sid = torch.as_tensor(a.sense, device=self.device)
        S = len(a.keys)
        sums = torch.zeros(S, X_t.shape[1], device=self.device).index_add_(0, sid, X_t.index_select(0, tok))
        counts = torch.zeros(S, device=self.device).index_add_(0, sid, torch.ones_like(sid, dtype=torch.float))
        self.centroids_ = torch.nn.functional.normalize(sums / counts[:, None], dim=1)
        self.counts_ = counts.cpu().numpy()
        return self

    def candidates(self, lemma: str, pos: str) -> list[int]:
        """Centroid rows of the lemma's WordNet senses that were seen in SemCor (WordNet order)."""
        return [self.sense_index_[k] for k in self.senses_fn(lemma, pos) if k in self.sense_index_]

    @torch.inference_mode()
    def predict(self, X: np.ndarray, lemmas: Sequence[str], poses: Sequence[str]) -> list[str | None]:
        """X: (num_instances, dim). Nearest seen candidate sense, else WordNet first sense, else None."""
        if self.centroids_ is None:
            raise RuntimeError("Call fit() before predict().")
        if not (len(X) == len(lemmas) == len(poses)):
            raise ValueError("X, lemmas and poses must have the same length.")
        keys = list(self.sense_index_)
        memo: dict[tuple[str, str], list[int]] = {}   # many instances share a lemma+POS
        cand = []
        for pair in zip(lemmas, poses):
            if pair not in memo:
                memo[pair] = self.candidates(*pair)
            cand.append(memo[pair])
        preds: list[str | None] = [None] * len(cand)
        with_cand = [i for i, c in enumerate(cand) if c]
        for i, c in enumerate(cand):
            if not c:
                preds[i] = self.first_sense_fn(lemmas[i], poses[i])
        if not with_cand:
            return preds
        width = max(len(cand[i]) for i in with_cand)
        # Padded candidate matrix (num_instances, width); -1 pads are masked to -inf below.
        pad = np.full((len(with_cand), width), -1, dtype=np.int64)
        for r, i in enumerate(with_cand):
            pad[r, :len(cand[i])] = cand[i]
        X_all = torch.as_tensor(np.asarray(X, dtype=np.float32)[with_cand], device=self.device)
        pad_t = torch.as_tensor(pad, device=self.device)
        for start in range(0, len(with_cand), self.batch_size):
            xb = torch.nn.functional.normalize(X_all[start:start + self.batch_size], dim=1)   # (B, d)
            cb = pad_t[start:start + self.batch_size]                                         # (B, width)
            sims = torch.einsum("bd,bwd->bw", xb, self.centroids_[cb.clamp(min=0)])          # (B, width)
            sims = sims.masked_fill(cb < 0, float("-inf"))
            # Ties (e.g. a static model gives every sense seen only with one word form the same
            # centroid) go to the candidate earliest in WordNet order, not to rounding noise.
            near_best = sims >= sims.max(dim=1, keepdim=True).values - self.tie_tol
            first = near_best.to(torch.uint8).argmax(dim=1, keepdim=True)     # first True
            best = cb.gather(1, first).squeeze(1).cpu().numpy()
            for r, b in enumerate(best, start=start):
                preds[with_cand[r]] = keys[int(b)]
        return preds

    def score(self, X: np.ndarray, lemmas: Sequence[str], poses: Sequence[str],
              golds: Sequence[Sequence[str]]) -> float:
        """F1 (percent) of ``predict`` against gold keys."""
        return score(self.predict(X, lemmas, poses), golds)["F1"]


def first_sense_predictions(lemmas: Sequence[str], poses: Sequence[str],
                            first_sense_fn: Callable[[str, str], str | None] | None = None) -> list[str | None]:
    """The WordNet first-sense baseline (no embeddings)."""
    if first_sense_fn is None:
        from corpora.wordnet import first_sense_key as first_sense_fn
    return [first_sense_fn(l, p) for l, p in zip(lemmas, poses)]


# ----------------------------------------------------------------------------- tokens -> pieces

@dataclass
class PieceLayout:
    """Words fed to the model (pieces) and which piece rows make up each token of interest.

    sentences: piece-level sentences for ``get_features``.
    rows:      (num_piece_refs,) global piece rows, grouped by token.
    starts:    (num_tokens,) start of each token's group in ``rows`` (np.add.reduceat segments).
    counts:    (num_tokens,) pieces per token.
    """

    sentences: list[list[str]]
    rows: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    def token_vectors(self, layer: np.ndarray) -> np.ndarray:
        """(num_tokens, dim) float32: mean of each token's piece vectors in ``layer`` (num_pieces, dim)."""
        if len(self.starts) == 0:
            return np.zeros((0, layer.shape[1]), np.float32)
        if len(self.rows) == len(layer) and np.array_equal(self.rows, np.arange(len(layer))):
            X = _float_tensor(layer)   # a restricted layout: every row, in order
        else:
            X = _float_tensor(layer[self.rows])   # fancy indexing reads only these rows
        if len(self.rows) == len(self.starts):   # one piece per token: nothing to pool
            return X.numpy()
        # One index_add_ (multi-threaded) instead of np.add.reduceat, which took ~1.7 s per SemCor layer.
        token_of_row = torch.from_numpy(np.repeat(np.arange(len(self.starts)), self.counts.astype(np.int64)))
        sums = torch.zeros(len(self.starts), X.shape[1]).index_add_(0, token_of_row, X)
        return (sums / torch.from_numpy(self.counts)[:, None]).numpy()

    def restrict(self) -> tuple[np.ndarray, "PieceLayout"]:
        """(keep, layout): the piece rows this layout reads, for ``get_features(..., keep=keep)``, and
        the same layout re-indexed onto features stored with that ``keep``."""
        keep = np.unique(self.rows)
        return keep, replace(self, rows=np.searchsorted(keep, self.rows))


def _float_tensor(a: np.ndarray) -> torch.Tensor:
    """float32 tensor of (possibly read-only, memory-mapped) float16/32 rows; only read, never written.

    torch widens float16 in ~0.1 s per SemCor layer; ``np.asarray(..., float32)`` took 0.2-1.1 s.
    """
    with warnings.catch_warnings():   # "non-writable array": we never write through it
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(np.asarray(a)).float()


def build_layout(sentences: Sequence[Sequence[Sequence[str]]],
                 selected: Sequence[Sequence[int]]) -> PieceLayout:
    """sentences[i][t]: the pieces of token t of sentence i; selected[i]: token indices wanted.

    Tokens of interest are returned in sentence order, then in the order of ``selected[i]``.
    """
    flat: list[list[str]] = []
    rows, starts, counts = [], [], []
    offset = 0
    for toks, sel in zip(sentences, selected):
        tok_start = np.cumsum([0] + [len(p) for p in toks])
        flat.append([piece for p in toks for piece in p])
        for t in sel:
            starts.append(len(rows))
            counts.append(len(toks[t]))
            rows.extend(range(offset + tok_start[t], offset + tok_start[t + 1]))
        offset += int(tok_start[-1])
    return PieceLayout(flat, np.asarray(rows, np.int64), np.asarray(starts, np.int64),
                       np.asarray(counts, np.float32))


def eval_word_pieces(word: str) -> list[str]:
    """An evaluation-framework word as model input: split on spaces ("prime minister"), but a
    hyphenated word ("change-ringing") stays one word, as the framework treats it."""
    return word.split() or [word]


def combine_layers(per_layer: dict[int, np.ndarray], spec: str | int, num_layers: int) -> np.ndarray:
    """Token vectors for one layer or a fixed combination.

    spec: a layer index, "mean" (uniform average of all layers), or "mix:w0,w1,..." (fixed
    weights, normalised to sum 1, e.g. scalar-mix weights learned by ``probes.mix``).
    """
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit()):
        return per_layer[int(spec)]
    if spec == "mean":
        w = np.full(num_layers, 1.0 / num_layers)
    elif isinstance(spec, str) and spec.startswith("mix:"):
        w = np.array([float(x) for x in spec[4:].split(",")])
        if len(w) != num_layers or w.sum() <= 0 or (w < 0).any():
            raise ValueError(f"{spec!r}: need {num_layers} non-negative weights.")
        w = w / w.sum()
    else:
        raise ValueError(f"Unknown layer spec {spec!r}: use an index, 'mean' or 'mix:w0,w1,...'.")
    return sum(float(w[j]) * per_layer[j] for j in range(num_layers))


# ----------------------------------------------------------------------------- end-to-end run

def parse_layer_specs(spec: str | None, num_layers: int) -> list[str]:
    """CLI layer argument -> list of specs: "all" (default: every layer, then "mean"), "mean",
    "0,1,2", or "mix:w0,w1,..."; indices are checked against ``num_layers``."""
    from probes.errors import ProbeInputError

    if spec is None or spec == "all":
        return [str(j) for j in range(num_layers)] + (["mean"] if num_layers > 1 else [])
    out = []
    for part in ([spec] if spec.startswith("mix:") else spec.split(",")):
        part = part.strip()
        if part == "mean" or part.startswith("mix:"):
            if part.startswith("mix:"):
                w = part[4:].split(",")
                if len(w) != num_layers:
                    raise ProbeInputError(f"{part!r} gives {len(w)} weights; the model has {num_layers} layers.")
            out.append(part)
            continue
        try:
            j = int(part)
        except ValueError:
            raise ProbeInputError(f"Bad layer {part!r}: use layer indices like 0,1,2, 'all', 'mean' or "
                                  f"'mix:w0,w1,...'.") from None
        if not 0 <= j < num_layers:
            raise ProbeInputError(f"Layer {j} out of range: the model has layers 0..{num_layers - 1}.")
        out.append(str(j))
    if not out:
        raise ProbeInputError("No layers selected.")
    return out


def _semcor_slice(limit: int | None):
    from corpora.semcor import load_semcor

    sentences, _ = load_semcor()
    if limit is not None:
        sentences = sentences[:limit]
    selected = [[t for t, tok in enumerate(s.tokens) if tok.sense_keys] for s in sentences]
    keep = [i for i, sel in enumerate(selected) if sel]
    sentences = [sentences[i] for i in keep]
    selected = [selected[i] for i in keep]
    return sentences, selected


def _semcor_view(limit: int | None) -> tuple[PieceLayout, np.ndarray, SenseAssignments, int]:
    """SemCor as the WSD probe reads it: (layout restricted to the tagged tokens, the piece rows to
    keep, their sense assignments, number of sentences).

    Building it walks SemCor's 838k tokens in Python (~4 s), so it is cached on disk like the parsed
    corpus, under the corpus's fingerprint. Bump the version when this function's output changes.
    """
    from corpora.cache import cached
    from corpora.semcor import semcor_fingerprint
    from probes.errors import ProbeInputError

    def build():
        sentences, selected = _semcor_slice(limit)
        if not sentences:
            raise ProbeInputError("No sense-tagged SemCor tokens in this slice.")
        layout = build_layout([[tok.pieces for tok in s.tokens] for s in sentences], selected)
        keys = SenseAssignments.from_keys([s.tokens[t].sense_keys for s, sel in zip(sentences, selected) for t in sel])
        keep, layout = layout.restrict()
        return layout, keep, keys, len(sentences)

    return cached("wsd-semcor-view", 1, {"semcor": semcor_fingerprint(), "limit": limit}, build)


def _eval_slice(limit: int | None):
    """Sentences of ALL (the concatenation of the five sets), first ``limit`` of each set."""
    from corpora.wsd_eval import load_wsd_dataset

    data = load_wsd_dataset("ALL")
    if limit is None:
        return [s for s in data.sentences if s.instances]
    per_set: dict[str, int] = {}
    out = []
    for s in data.sentences:
        name = s.id.split(".")[0]
        if s.instances and per_set.get(name, 0) < limit:
            per_set[name] = per_set.get(name, 0) + 1
            out.append(s)
    return out


def evaluate_predictions(instances, preds: list[str | None], spec: str) -> list[dict]:
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
            rows.append({"dataset": name, "layer": spec, "metric": metric, "value": round(sc[metric], 2),
                         "n": sc["n"]})
    for tag, sc in score_by_pos(preds, golds, [inst.pos for inst in instances]).items():
        rows.append({"dataset": f"ALL:{tag}", "layer": spec, "metric": "F1", "value": round(sc["F1"], 2),
                     "n": sc["n"]})
    return rows


def run_first_sense(limit: int | None = None, keys_dir: Path | None = None) -> dict:
    """The WordNet first-sense baseline on the evaluation sets (no embeddings)."""
    from probes.errors import ProbeInputError

    sentences = _eval_slice(limit)
    instances = [inst for s in sentences for inst in s.instances]
    if not instances:
        raise ProbeInputError("No WSD evaluation instances in this slice (--limit 0?).")
    preds = first_sense_predictions([i.lemma for i in instances], [i.pos for i in instances])
    if keys_dir is not None:
        write_key_file(Path(keys_dir) / "wordnet-first-sense.key.txt", [i.id for i in instances], preds)
    return {"model": "wordnet-1st-sense", "probe": "wsd", "params": {"limit": limit},
            "rows": evaluate_predictions(instances, preds, "first-sense")}


def run_wsd(embedder, layers: str | None = None, limit: int | None = None, device: str | None = None,
            keys_dir: Path | None = None, progress=None, show_progress: bool = True,
            semcor_limit: int | None = None, feature_root: Path | None = None) -> dict:
    """1-NN WSD for every requested layer spec: SemCor sense centroids -> the five sets and ALL.

    ``limit``: first N sentences of SemCor and of each evaluation set; ``semcor_limit`` overrides
    it for SemCor only (e.g. to fit a slow model's extraction into a time budget).

    Returns a result dict for ``probes.results.save_result`` (extra: timings and coverage).
    """
    import time

    from probes.errors import ProbeInputError
    from probes.features import get_features

    if limit is not None and limit <= 0:
        raise ProbeInputError(f"--limit {limit} selects no sentences.")
    if semcor_limit is not None and semcor_limit <= 0:
        raise ProbeInputError(f"--semcor-limit {semcor_limit} selects no sentences.")
    specs = parse_layer_specs(layers, embedder.num_layers)
    t0 = time.perf_counter()
    sem_limit = semcor_limit if semcor_limit is not None else limit
    ev_sents = _eval_slice(limit)
    instances = [inst for s in ev_sents for inst in s.instances]
    if not instances:
        raise ProbeInputError("No WSD evaluation instances in this slice.")
    # Only the rows of the tokens we score are stored (SemCor: ~27% of its words); the model still
    # sees whole sentences. "-tagged" / "-instances" keep these entries apart from whole-sentence ones.
    sem_layout, sem_keep, sem_keys, num_sem_sents = _semcor_view(sem_limit)
    ev_keep, ev_layout = build_layout([[eval_word_pieces(w) for w in s.words] for s in ev_sents],
                                      [[inst.index for inst in s.instances] for s in ev_sents]).restrict()
    suffix = "" if limit is None else f"-limit{limit}"
    needed = sorted({int(s) for s in specs if s.isdigit()} |
                    (set(range(embedder.num_layers)) if any(not s.isdigit() for s in specs) else set()))

    def prog(lo, hi):
        return None if progress is None else (lambda f, m: progress(lo + (hi - lo) * f, m))

    sem_suffix = "" if sem_limit is None else f"-limit{sem_limit}"
    sem_feats = get_features(embedder, f"semcor-tagged{sem_suffix}", sem_layout.sentences, needed, keep=sem_keep,
                             progress=prog(0.0, 0.8), show_progress=show_progress, root=feature_root)
    ev_feats = get_features(embedder, f"wsd-ALL-instances{suffix}", ev_layout.sentences, needed, keep=ev_keep,
                            progress=prog(0.8, 0.9), show_progress=show_progress, root=feature_root)
    t_feat = time.perf_counter() - t0

    lemmas, poses = [i.lemma for i in instances], [i.pos for i in instances]
    # WordNet lookups once per lemma+POS (not per instance and layer spec), from the on-disk inventory.
    from corpora import wordnet

    inventory = wordnet.sense_inventory(zip(lemmas, poses))

    def senses_fn(lemma: str, pos: str) -> tuple[str, ...]:
        return inventory[(lemma, pos)]

    def first_sense_fn(lemma: str, pos: str) -> str | None:
        return next(iter(inventory[(lemma, pos)]), None)

    def new_probe() -> NearestSenseWSD:
        return NearestSenseWSD(senses_fn=senses_fn, first_sense_fn=first_sense_fn, device=device)

    combos = {s: None for s in specs if not s.isdigit()}
    combo_w = {}
    for s in combos:
        if s == "mean":
            combo_w[s] = np.full(embedder.num_layers, 1.0 / embedder.num_layers)
        else:
            w = np.array([float(x) for x in s[4:].split(",")])
            if (w < 0).any() or w.sum() <= 0:
                raise ProbeInputError(f"{s!r}: weights must be non-negative and not all zero.")
            combo_w[s] = w / w.sum()
    acc: dict[str, list[torch.Tensor]] = {}   # weighted sums of (semcor, eval) token vectors
    rows, coverage = [], {}
    for j in needed:
        Xs = sem_layout.token_vectors(sem_feats.layer(j))
        Xe = ev_layout.token_vectors(ev_feats.layer(j))
        if str(j) in specs:
            wsd = new_probe().fit(Xs, sem_keys)
            preds = wsd.predict(Xe, lemmas, poses)
            rows += evaluate_predictions(instances, preds, str(j))
            if not coverage:   # the same for every layer: one sense inventory, one set of seen senses
                coverage = {"senses": len(wsd.sense_index_),
                            "instances_with_seen_sense": int(sum(bool(wsd.candidates(l, p))
                                                                 for l, p in zip(lemmas, poses)))}
            if keys_dir is not None:
                write_key_file(Path(keys_dir) / f"{embedder.name}-layer{j}.key.txt", [i.id for i in instances], preds)
        for s in combos:   # in place, multi-threaded: SemCor is ~226k x dim per layer
            if s not in acc:
                acc[s] = [torch.zeros(Xs.shape), torch.zeros(Xe.shape)]
            acc[s][0].add_(torch.from_numpy(Xs), alpha=float(combo_w[s][j]))
            acc[s][1].add_(torch.from_numpy(Xe), alpha=float(combo_w[s][j]))
        if progress is not None:
            progress(0.9 + 0.1 * (needed.index(j) + 1) / len(needed), f"WSD layer {j}")
    for s in combos:
        wsd = new_probe().fit(acc[s][0].numpy(), sem_keys)
        preds = wsd.predict(acc[s][1].numpy(), lemmas, poses)
        rows += evaluate_predictions(instances, preds, s)
        if keys_dir is not None:
            write_key_file(Path(keys_dir) / f"{embedder.name}-{s.replace(':', '_')}.key.txt",
                           [i.id for i in instances], preds)
    return {"model": embedder.name, "probe": "wsd", "fingerprint": embedder.fingerprint(),
            "params": {"layers": specs, "limit": limit, "semcor_limit": semcor_limit},
            "rows": rows,
            "extra": {"semcor_sentences": num_sem_sents, "semcor_tokens": sem_keys.num_tokens,
                      "eval_instances": len(instances), "feature_s": round(t_feat, 1),
                      "total_s": round(time.perf_counter() - t0, 1), **coverage}}
