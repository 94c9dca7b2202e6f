"""The one interface every embedder implements.

Sentences of words in; for every word a vector at every layer out (layer 0 is the
context-independent layer), plus word-level attention where the model has it.

    emb = load_embedder("minilm")
    out = emb.embed([["The", "bank", "closed", "."]])
    out[0].vectors.shape  # (num_layers, num_words, dim), float32 numpy
"""

from __future__ import annotations

import hashlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from corpora.errors import RequestError
from models.errors import ModelLoadError, UnknownModelError

__all__ = [
    "Embedder",
    "ModelInfo",
    "ModelLoadError",
    "PieceAttention",
    "RowBlock",
    "SentenceEmbedding",
    "UnknownModelError",
    "check_unicode",
    "default_device",
    "seeded",
]


@dataclass
class SentenceEmbedding:
    """Embeddings of one sentence.

    vectors:    (num_layers, num_words, dim) float32; layer 0 = context-independent layer.
    oov:        (num_words,) bool, True where a static model had no vector for the word (zeros, or for
                fastText its subword n-gram vector).
    attentions: (num_attn_layers, num_heads, num_words, num_words) float32 or None; rows sum to 1,
                subword pieces pooled to words (sum over key pieces, mean over query pieces).
    """

    words: list[str]
    vectors: np.ndarray
    oov: np.ndarray | None = None
    attentions: np.ndarray | None = None


@dataclass
class PieceAttention:
    """Attention over the model's own pieces (subwords and special tokens) for one sentence.

    attentions: (num_layers, num_heads, num_pieces, num_pieces); word_ids[i] is the word index of
    piece i, or None for special tokens.
    """

    pieces: list[str]
    word_ids: list[int | None]
    attentions: np.ndarray


@dataclass
class RowBlock:
    """The stored rows of some sentences of a chunk (:meth:`Embedder.embed_rows`), in the storage dtype.

    sentences: (S,) indices into the chunk, in the order their rows follow each other
    counts:    (S,) rows per sentence (its kept words)
    rows:      (num_layers, counts.sum(), dim) CPU tensor; sentence k's kept words in order
    finite:    whether every value is finite, where it was checked on the device; None: not checked yet
    """

    sentences: np.ndarray
    counts: np.ndarray
    rows: torch.Tensor
    finite: bool | None = None


@dataclass
class ModelInfo:
    name: str
    family: str  # the spec's family name (models.spec.FAMILIES): "static" | "elmo" | "bert" | "gpt" …
    num_layers: int  # including layer 0
    dim: int
    source: str  # file or package the weights came from
    description: str = ""
    card: dict = field(default_factory=dict)  # the JSON model card, where there is one
    # The model's own index of each output layer when it keeps only some (option ``layers``); None = all.
    layer_ids: tuple[int, ...] | None = None


def mostly_unknown(words: int, unknown: int, least: int = 8) -> bool:
    """Whether a batch of ``words`` words, ``unknown`` of them without a vector of their own (the tokenizer's
    unknown token, a static model's zero vector), is too unknown to embed: at least ``least`` words and more than
    half unknown, or two words or more and every one unknown (a small test file no model word was checked in).
    Such vectors would all be one vector: the text, or the model's word list, is not what it seems."""
    return (words >= least and unknown > words / 2) or (words >= 2 and unknown == words)


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def tf32_marker(device: torch.device, dtype: torch.dtype) -> str:
    """ "|tf32" for float32 on a GPU where torch may use TF32 (cuDNN's convolutions and LSTMs by default, matmuls
    when set): vectors ~1e-3 away from true float32, so a fingerprint of their own (empty elsewhere)."""
    tf32 = torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32
    return "|tf32" if device.type == "cuda" and dtype == torch.float32 and tf32 else ""


def use_compute(threads: int | None, device: str | None) -> None:
    """A command line's ``--threads`` (torch's CPU threads, set) and ``--device`` (checked, ``check_device``): a
    RequestError naming the flag when either cannot be used."""
    if threads is not None:
        if threads < 1:
            raise RequestError(f"--threads {threads}: give a positive number of CPU threads.")
        torch.set_num_threads(threads)
    if device is not None:
        try:
            check_device(device)
        except RequestError as exc:
            raise RequestError(f"--device: {exc}") from None


def parse_device(text: str) -> torch.device:
    """The torch device ``text`` names, whether or not this machine has it (a model registry may serve a GPU
    machine); a RequestError when torch cannot parse it."""
    try:
        return torch.device(text)
    except (RuntimeError, ValueError):
        raise RequestError(f"{text!r} is not a torch device (use cpu, cuda or cuda:N)") from None


def check_device(text: str) -> torch.device:
    """The torch device ``text`` names (``cpu``, ``cuda``, ``cuda:N``, ``mps``), or a RequestError saying why it
    cannot be used here: torch cannot parse it (``parse_device``), or this machine or torch build lacks it. Every
    command line checks its ``--device`` with it before any model loads."""
    device = parse_device(text)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RequestError(
                f"{text!r}: this torch build or machine has no CUDA GPU; use cpu (see README, GPU install)"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise RequestError(f"{text!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise RequestError(f"{text!r}: MPS is not available on this machine")
    return device


#: torch has one CPU generator per process: a thread drawing under a seed holds this lock, so that another thread's
#: seed cannot change its draws (two app sessions' probes fitting at once; a random twin loading beside a fit). The
#: price: two sessions' fits run one after the other (a fit's dropout draws from the same generator all along).
SEEDED_DRAWS = threading.RLock()


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Draw under ``seed`` (``torch.manual_seed``) without touching the caller's CPU random state, one thread at a
    time (``SEEDED_DRAWS``): everything that draws from torch's own generators runs inside it (a probe's fit, its
    dropout included; a random twin's weights)."""
    with SEEDED_DRAWS, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def check_unicode(sentence_index: int, words: list[str]) -> None:
    """RequestError (a ValueError) naming the first word with a lone surrogate (text that is not valid Unicode)."""
    try:
        "\n".join(words).encode("utf-8")  # one C-speed pass over the whole sentence
        return
    except UnicodeEncodeError:
        pass
    for i, word in enumerate(words):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RequestError(  # a LabError: one line in the CLI and the app, whichever reader let it through
                f"Sentence {sentence_index + 1}, word {i + 1} ({word!r}) contains a lone surrogate "
                f"U+{ord(word[exc.start]):04X} at character {exc.start + 1}: not valid Unicode text "
                f"(a broken file or copy-paste?). Remove or replace it."
            ) from None


def check_keep(sentences: Sequence[Sequence[str]], keep: Sequence[np.ndarray] | None) -> None:
    """RequestError unless ``keep`` (the word indices :meth:`Embedder.embed_rows` stores) holds, per sentence,
    increasing indices of its words: the streamed path lays a sentence's rows out in word order."""
    if keep is None:
        return
    if len(keep) != len(sentences):
        raise RequestError(f"keep has {len(keep)} entries for {len(sentences)} sentences.")
    for n, (s, k) in enumerate(zip(sentences, keep)):
        k = np.asarray(k)
        if k.ndim != 1 or (k.size and (k[0] < 0 or k[-1] >= len(s) or (np.diff(k) <= 0).any())):
            raise RequestError(
                f"keep for sentence {n + 1} ({len(s)} words) must be increasing word indices from 0 to "
                f"{len(s) - 1}, got {k.tolist()[:10]}."
            )


class Embedder(ABC):
    """Base class: subclasses implement ``_embed_batch`` and fill ``info``."""

    info: ModelInfo
    device: torch.device
    has_attention: bool = False
    max_words_per_sentence: int = 100_000  # beyond this a clear ValueError, not an OOM
    random_init: int | None = None  # the seed its weights were re-drawn with (``reinitialise``)
    #: the libraries whose release can change its vectors (a kernel, a tokenizer): the feature cache records their
    #: versions with an entry and rebuilds it under others (``features.store.library_versions``)
    computed_with: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def num_layers(self) -> int:
        return self.info.num_layers

    @property
    def dim(self) -> int:
        return self.info.dim

    def fingerprint(self) -> str:
        """Stable id of the model's content (weights, config, tokenizer, options): the feature-cache key.

        No name and no path: a moved or renamed checkpoint keeps its cache, a retrained one at the
        same path gets a new key (``_fingerprint_extra`` hashes the files' bytes).
        """
        extra = self._fingerprint_extra() + ("" if self.random_init is None else f"|random_init={self.random_init}")
        if "torch" in self.computed_with:  # its vectors come out of torch's kernels
            extra += tf32_marker(self.device, getattr(self, "dtype", torch.float32))
        payload = json.dumps(
            {"family": self.info.family, "layers": self.info.num_layers, "dim": self.info.dim, "extra": extra},
            sort_keys=True,
        )
        return hashlib.sha1(payload.encode()).hexdigest()[:16]

    def _fingerprint_extra(self) -> str:
        """Subclasses add the content of their files (``corpora.digests.content_fingerprint``) and options."""
        return ""

    def reinitialise(self, seed: int) -> None:
        """Re-draw every weight in place under ``seed``: a random-weight baseline (``models.random_init``).

        The fingerprint and the card record the seed, so the feature cache never mixes the two.
        A family that can (its ``models.spec.Family`` says ``reinitialisable``) implements ``_redraw_weights``.
        """
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a whole number ≥ 0, got {seed!r}")
        self._redraw_weights(seed)
        self.random_init = seed
        self.info.card = {**self.info.card, "random_init": seed}

    def _redraw_weights(self, seed: int) -> None:
        """Draw fresh weights as training starts from, inside :func:`seeded` (``seed``)."""
        raise ModelLoadError(f"{self.name}: no layers to re-initialise (family {self.info.family}).")

    def embed(self, sentences: Sequence[Sequence[str]], with_attention: bool = False) -> list[SentenceEmbedding]:
        """Embed sentences (lists of words). Empty sentences give (num_layers, 0, dim) arrays.

        Every embedder's input is checked here, the same way for every family: a sentence longer
        than ``max_words_per_sentence`` and a word holding a lone surrogate code point
        (U+D800–U+DFFF, e.g. ``"\\ud800"`` from a broken file or a browser) raise ``ValueError``
        naming the sentence, the word and its position. Such a string is not valid Unicode text (it
        cannot be encoded as UTF-8); it is refused rather than silently replaced, so no model sees
        text other than what was given.
        """
        sentences = self._checked(sentences)
        if with_attention and not self.has_attention:
            raise ValueError(f"{self.name} has no attention.")
        results: list[SentenceEmbedding | None] = [None] * len(sentences)
        nonempty = [i for i, s in enumerate(sentences) if s]
        for i, s in enumerate(sentences):
            if not s:
                results[i] = SentenceEmbedding(
                    words=[],
                    vectors=np.zeros((self.num_layers, 0, self.dim), np.float32),
                    oov=np.zeros(0, bool),
                    attentions=None,
                )
        if nonempty:
            try:
                outs = self._embed_batch([sentences[i] for i in nonempty], with_attention)
            except (MemoryError, RuntimeError) as exc:  # torch's CPU allocator says it in a RuntimeError
                if isinstance(exc, RuntimeError) and "can't allocate memory" not in str(exc):
                    raise
                words = sum(len(sentences[i]) for i in nonempty)
                raise RequestError(
                    f"Out of memory embedding {len(nonempty):,} sentences ({words:,} words) at once with {self.name}: "
                    "embed them a slice at a time, or stream a dataset (embed_rows, features.get_features)."
                ) from None
            for i, out in zip(nonempty, outs):
                results[i] = out
        return results  # type: ignore[return-value]

    def check_text(self, sentences: Sequence[Sequence[str]]) -> None:
        """Refuse a whole dataset this model cannot read before its extraction starts (``features.build``); a family
        overrides it (a static model: mostly unknown words). Default: nothing to check."""
        return None

    def _checked(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """The sentences as lists of str, each checked (see :meth:`embed`)."""
        # read once (a generator would be empty the second time), each sentence checked in turn
        return [self._checked_sentence(n, s) for n, s in enumerate(list(sentences))]

    def _checked_sentence(self, n: int, sentence: Sequence[str]) -> list[str]:
        """Sentence ``n`` (0-based, said 1-based) as a list of str, or a RequestError saying what is wrong with it."""
        if isinstance(sentence, str):  # list("The bank") would be its characters, silently
            raise RequestError(
                f"Sentence {n + 1} is a string ({sentence[:30]!r}), not a list of words: pass [text.split()] for one."
            )
        s = list(map(str, sentence))
        if "" in s:  # no piece to read: a tokenizer's fallback would put a control token (GPT-2's end of text)
            raise RequestError(f"Sentence {n + 1}, word {s.index('') + 1} is empty: a word needs a character.")
        if len(s) > self.max_words_per_sentence:
            raise RequestError(  # a ValueError too; a LabError, so a command line says it in one line
                f"Sentence {n + 1} has {len(s):,} words; {self.name} accepts at most "
                f"{self.max_words_per_sentence:,} in one sentence. Split it (a file without sentence breaks?)."
            )
        check_unicode(n, s)
        return s

    def embed_rows(
        self, chunks: Iterable[tuple[Sequence[Sequence[str]], Sequence[np.ndarray] | None]], dtype: torch.dtype
    ) -> Iterator[tuple[int, RowBlock]]:
        """The feature cache's path: per chunk (sentences, per-sentence kept word indices, increasing, or None = all),
        the kept words' vectors in ``dtype`` as (chunk index, :class:`RowBlock`), every sentence of a chunk once.

        Checked as :meth:`embed`. This default embeds each chunk with :meth:`embed` and yields one block per
        chunk; a family can stream (``TransformerEmbedder``: a block per batch, pooled and cast on the
        device, the next chunk tokenized meanwhile). Values are those :meth:`embed` returns, cast to ``dtype``.
        """
        for c, (sentences, keep) in enumerate(chunks):
            outs = self.embed(sentences)
            check_keep([out.words for out in outs], keep)
            parts, counts = [], np.zeros(len(outs), np.int64)
            for k, out in enumerate(outs):
                n = len(out.words)
                if out.vectors.shape != (self.num_layers, n, self.dim):
                    raise ValueError(
                        f"{self.name} returned vectors of shape {out.vectors.shape} for a sentence of {n} words; "
                        f"expected {(self.num_layers, n, self.dim)}."
                    )
                vectors = out.vectors if keep is None else out.vectors[:, keep[k]]
                counts[k] = vectors.shape[1]
                parts.append(torch.from_numpy(np.ascontiguousarray(vectors)).to(dtype))
            rows = torch.cat(parts, 1) if parts else torch.zeros(self.num_layers, 0, self.dim, dtype=dtype)
            yield c, RowBlock(np.arange(len(outs)), counts, rows)

    @abstractmethod
    def _embed_batch(self, sentences: list[list[str]], with_attention: bool) -> list[SentenceEmbedding]:
        """Embed non-empty sentences; may batch internally in any order, returns input order."""

    def piece_attention(self, words: Sequence[str]) -> PieceAttention:
        raise ValueError(f"{self.name} has no attention.")

    def to(self, device: str | torch.device) -> Embedder:
        self.device = torch.device(device)
        return self
