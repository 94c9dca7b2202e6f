"""Static (context-independent) word embeddings behind the common :class:`~models.base.Embedder`.

One vector per word type, so ``num_layers == 1`` (layer 0 only). The whole matrix lives as one
torch tensor on :func:`~models.base.default_device` with an extra all-zero row at the end; a
batch of sentences is looked up with a single ``index_select`` on the device.

Word lookup (in this order):

1. the exact word;
2. its lower-cased form (GloVe 6B is lower-cased; our own models may be cased, and a
   sentence-initial "The" should still find "the");
3. fastText only: the mean of the word's character n-gram vectors (hashed buckets, exactly as
   gensim/fastText compute vectors for unseen words);
4. otherwise the zero vector — but a feature extraction of at least 8 words, more than half of them unknown,
   is refused (``check_text``, ``models.base.mostly_unknown``): a vectors file whose words are written another
   way ("the_NOUN") would otherwise give a probe all-zero vectors and a wrong score.

``SentenceEmbedding.oov`` is True for every word not found in steps 1-2, i.e. not in the
vocabulary: its vector is zeros, or for fastText the n-gram vector.

The fingerprint hashes the content (vocabulary, matrix, n-grams, options), never a path or a file
format: the same vectors read from a ``.txt``, a ``.bin`` or another folder share one feature cache.

Also: cosine ``neighbours``, 3CosAdd ``analogy`` (a : b :: c : ?), both one matrix product on
the device over the unit-normalised vocabulary matrix.

Files: ``models.static`` loads and saves these models (``assets/<name>/``, GloVe 6B, any vectors file).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from corpora.errors import LabError
from models.base import Embedder, ModelInfo, ModelLoadError, SentenceEmbedding, default_device, mostly_unknown
from models.errors import UnknownTextError
from models.spec import STATIC


class OutOfVocabularyError(LabError, KeyError):
    """A word has no vector in this model (and the model cannot build one from subwords)."""


@dataclass
class SubwordNgrams:
    """fastText's hashed character n-grams: vectors for words outside the vocabulary.

    vectors: (bucket, dim) float32; a word's n-grams of ``<word>`` (lengths min_n..max_n) are
    hashed into ``bucket`` rows by fastText's FNV-1a variant (gensim's ``ft_ngram_hashes``).
    """

    vectors: np.ndarray | torch.Tensor
    min_n: int
    max_n: int

    @property
    def bucket(self) -> int:
        return int(self.vectors.shape[0])

    def hashes(self, word: str) -> list[int]:
        from gensim.models.fasttext import ft_ngram_hashes  # lazy: gensim (seconds), only fastText models need it

        return list(ft_ngram_hashes(word, self.min_n, self.max_n, self.bucket))


def _check_finite(source: str, mat: np.ndarray | torch.Tensor, label) -> None:
    """ModelLoadError naming the first row with nan/inf; float64 row sums (no huge bool temporaries)."""
    mat = mat.cpu().numpy() if torch.is_tensor(mat) else np.asarray(mat)
    bad = np.flatnonzero(~np.isfinite(mat.sum(axis=1, dtype=np.float64)))
    if bad.size:
        raise ModelLoadError(f"{source}: non-finite value (nan/inf) in {label(int(bad[0]))} (row {bad[0] + 1}).")


def _check_storable(source: str, vectors: np.ndarray, words: Sequence[str]) -> None:
    """ModelLoadError when most word vectors (zero rows aside) have no value as large as float16's smallest normal
    number (6.1e-5): the feature cache stores float16, which keeps such values to a digit or two and turns those
    under 6e-8 to zeros (a file of 1e-9-scaled vectors scored as if no word were known; cosine measures do not
    depend on scale). A few such rows (a placeholder) are let be."""
    largest = np.maximum(vectors.max(axis=1), -vectors.min(axis=1)) if len(vectors) else np.zeros(0)  # no |V|×d copy
    nonzero, normal = largest > 0, float(np.finfo(np.float16).smallest_normal)
    small = np.flatnonzero(nonzero & (largest < normal))
    if small.size > nonzero.sum() / 2:
        raise ModelLoadError(
            f"{source}: {small.size:,} of its {int(nonzero.sum()):,} word vectors (the first: "
            f"{words[small[0]][:40]!r}, row {small[0] + 1}) have no value as large as {normal:.2g}, which the feature "
            "cache's float16 keeps to a digit or two or turns to zeros: scale the vectors up (cosine similarities do "
            "not change)."
        )


def keyed_vectors_arrays(kv, source: str) -> tuple[list[str], np.ndarray, SubwordNgrams | None]:
    """Words, (V, dim) float32 vectors and n-grams (None without buckets) of a gensim ``KeyedVectors``.

    A ``FastTextKeyedVectors`` gives gensim's composed word vectors (fastText's: the word's row
    averaged with its n-gram rows) and keeps ``vectors_ngrams`` (bucket, dim) for unknown words.
    ModelLoadError (naming ``source``) for keys that are not words or n-grams that hashes cannot index.
    """
    words = list(kv.index_to_key)
    if (bad := next((w for w in words if not isinstance(w, str)), None)) is not None:
        raise ModelLoadError(f"{source}: the vectors have keys that are not words, e.g. {bad!r}.")
    vectors = np.asarray(kv.vectors, dtype=np.float32)
    if getattr(kv, "vectors_ngrams", None) is None or not getattr(kv, "bucket", 0):
        return words, vectors, None
    if len(kv.vectors_ngrams) != kv.bucket:  # old gensim kept only the n-grams it saw: hashes cannot index them
        raise ModelLoadError(
            f"{source}: {len(kv.vectors_ngrams)} n-gram rows for {kv.bucket} buckets (an old gensim "
            "model?): unknown-word vectors cannot be computed. save_word2vec_format keeps its words."
        )
    return words, vectors, SubwordNgrams(np.asarray(kv.vectors_ngrams, np.float32), int(kv.min_n), int(kv.max_n))


class StaticEmbedder(Embedder):
    """A word -> vector table (plus optional fastText n-grams).

    Args:
        name: model name.
        words: V unique words; row i of ``vectors`` is the vector of ``words[i]``.
        vectors: (V, dim) float array.
        source: file or package the vectors came from.
        ngrams: fastText subword n-grams, or None (unknown words then get zeros).
        lowercase_fallback: try ``word.lower()`` when the exact word is not in the vocabulary.
        card: the model card (JSON dict), if any.
        device: where the tables live (default: CUDA when present, else CPU).
    """

    def __init__(
        self,
        name: str,
        words: Sequence[str],
        vectors: np.ndarray,
        source: str,
        *,
        ngrams: SubwordNgrams | None = None,
        lowercase_fallback: bool = True,
        card: dict | None = None,
        description: str = "",
        device: str | torch.device | None = None,
    ) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise ModelLoadError(f"{name}: vectors of shape {vectors.shape} do not match {len(words)} words")
        _check_finite(source, vectors, lambda i: f"the vector of {words[i][:40]!r}")
        if len(words) and not vectors.any():  # every word would read as unknown, every similarity as undefined
            raise ModelLoadError(f"{name}: every vector in {source} is all zeros; the file holds no embedding.")
        _check_storable(source, vectors, words)
        if ngrams is not None:
            _check_finite(source, ngrams.vectors, lambda i: f"n-gram bucket {i}")
        self.words: list[str] = list(words)
        self.key_to_index: dict[str, int] = {w: i for i, w in enumerate(self.words)}
        if len(self.key_to_index) != len(self.words):
            raise ModelLoadError(f"{name}: the vocabulary from {source} has repeated words")
        self.lowercase_fallback = lowercase_fallback
        dim = int(vectors.shape[1])
        self.info = ModelInfo(
            name=name,
            family=STATIC.name,
            num_layers=1,
            dim=dim,
            source=str(source),
            description=description,
            card=dict(card or {}),
        )
        self.device = torch.device(device) if device is not None else default_device()
        # Row V is the zero vector every unknown word gathers.
        table = np.concatenate([vectors, np.zeros((1, dim), np.float32)])
        self._table = torch.from_numpy(table).to(self.device)
        self._unit: torch.Tensor | None = None  # unit-normalised rows, built on first query
        self.ngrams = ngrams
        if ngrams is not None:
            if ngrams.vectors.shape[1] != dim:
                raise ModelLoadError(f"{name}: n-gram vectors have dim {ngrams.vectors.shape[1]}, words {dim}")
            ngrams.vectors = torch.as_tensor(np.asarray(ngrams.vectors, dtype=np.float32)).to(self.device)
        self._fp: str | None = None

    # ------------------------------------------------------------------ properties

    @property
    def vectors(self) -> torch.Tensor:
        """(V, dim) float32 tensor on ``self.device`` (a view of the lookup table)."""
        return self._table[:-1]

    @property
    def vocab(self) -> list[str]:
        return self.words

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return self.index(word) is not None

    def to(self, device: str | torch.device) -> StaticEmbedder:
        self.device = torch.device(device)
        self._table = self._table.to(self.device)
        self._unit = None if self._unit is None else self._unit.to(self.device)
        if self.ngrams is not None:
            self.ngrams.vectors = self.ngrams.vectors.to(self.device)
        return self

    def _fingerprint_extra(self) -> str:
        # Content hash (vocabulary, shape, values; see the module doc): stable across copies, formats
        # and reinstalls. Hashed from a buffer, without a bytes copy of a multi-GB table.
        if self._fp is None:
            h = hashlib.sha1()
            h.update("\n".join(self.words).encode("utf-8", "surrogatepass"))
            h.update(str(tuple(self.vectors.shape)).encode())
            h.update(memoryview(np.ascontiguousarray(self.vectors.cpu().numpy())))
            if self.ngrams is not None:
                h.update(f"ngrams {self.ngrams.min_n} {self.ngrams.max_n}".encode())
                h.update(memoryview(np.ascontiguousarray(self.ngrams.vectors.cpu().numpy())))
            h.update(f"lower={self.lowercase_fallback}".encode())
            self._fp = h.hexdigest()[:16]
        return self._fp

    # ------------------------------------------------------------------ lookup

    def index(self, word: str) -> int | None:
        """Row of ``word`` (exact, then lower-cased), or None."""
        i = self.key_to_index.get(word)
        if i is None and self.lowercase_fallback:
            i = self.key_to_index.get(word.lower())
        return i

    def check_text(self, sentences: Sequence[Sequence[str]]) -> None:
        """Refuse a dataset (one feature extraction's sentences, ``features.build``) of at least 8 words of which
        this model knows at most half (``mostly_unknown``): a vectors file whose words are written another way
        ("the_NOUN") would give a probe all-zero vectors and a wrong score. Judged over the whole dataset, never
        per batch: the last batch of a length-sorted extraction holds its shortest sentences (URLs, names), which a
        model may rightly not know. fastText builds a vector for any word: nothing to refuse."""
        if self.ngrams is not None:
            return
        counts = Counter(w for s in sentences for w in s)
        unknown = sum(c for w, c in counts.items() if self.index(w) is None)
        total = sum(counts.values())
        if mostly_unknown(total, unknown):
            seen = ", ".join(repr(w) for w in list(counts)[:3])
            raise UnknownTextError(
                f"{self.name}: {unknown:,} of the {total:,} words to embed are not in its vocabulary "
                f"({len(self.words):,} words, e.g. {', '.join(repr(w) for w in self.words[:3])}; the text has "
                f"{seen}), so their vectors would all be zeros. Are the model's words written another way "
                '("the_NOUN", another language or tokenization)? Use text the model knows, or vectors with plain '
                "words."
            )

    def _ngram_vectors(self, words: list[str]) -> torch.Tensor:
        """(len(words), dim) mean n-gram vectors (zeros for a word without n-grams), on device."""
        assert self.ngrams is not None
        ids: list[int] = []
        offsets: list[int] = []
        for w in words:
            offsets.append(len(ids))
            ids.extend(self.ngrams.hashes(w))
        if not ids:
            return torch.zeros(len(words), self.dim, device=self.device)
        # embedding_bag(mean) gives zeros for an empty bag, i.e. a word without n-grams.
        return torch.nn.functional.embedding_bag(
            torch.tensor(ids, dtype=torch.long, device=self.device),
            self.ngrams.vectors,
            torch.tensor(offsets, dtype=torch.long, device=self.device),
            mode="mean",
        )

    def _lookup(self, words: list[str]) -> tuple[torch.Tensor, np.ndarray]:
        """Vectors (len(words), dim) on device and the (len(words),) bool OOV mask."""
        unk = len(self.words)
        ids = np.empty(len(words), dtype=np.int64)
        for k, w in enumerate(words):
            i = self.index(w)
            ids[k] = unk if i is None else i
        oov = ids == unk
        out = self._table.index_select(0, torch.from_numpy(ids).to(self.device))
        if self.ngrams is not None and oov.any():
            pos = np.flatnonzero(oov)
            uniq, inverse = np.unique(np.asarray(words, dtype=object)[pos], return_inverse=True)
            vecs = self._ngram_vectors(list(uniq))
            out[torch.from_numpy(pos).to(self.device)] = vecs[torch.from_numpy(inverse).to(self.device)]
        return out, oov

    def _embed_batch(self, sentences: list[list[str]], with_attention: bool) -> list[SentenceEmbedding]:
        flat = [w for s in sentences for w in s]
        with torch.inference_mode():
            vecs, oov = self._lookup(flat)
            vecs = vecs.float().cpu().numpy()
        out, start = [], 0
        for s in sentences:
            end = start + len(s)
            out.append(SentenceEmbedding(words=list(s), vectors=vecs[None, start:end], oov=oov[start:end]))
            start = end
        return out

    def word_vector(self, word: str) -> np.ndarray:
        """(dim,) float32 vector of ``word``; fastText builds one for unseen words.

        Raises:
            OutOfVocabularyError: the word has no vector.
        """
        return self._query(word).float().cpu().numpy()

    def _query(self, word: str) -> torch.Tensor:
        i = self.index(word)
        if i is not None:
            return self._table[i]
        if self.ngrams is not None and self.ngrams.hashes(word):
            return self._ngram_vectors([word])[0]
        raise OutOfVocabularyError(f"'{word}' is not in the vocabulary of {self.name} ({len(self.words)} words).")

    # ------------------------------------------------------------------ similarity

    @property
    def unit_vectors(self) -> torch.Tensor:
        """(V, dim) rows scaled to unit length (zero rows stay zero)."""
        if self._unit is None:
            self._unit = torch.nn.functional.normalize(self.vectors, dim=1)
        return self._unit

    def _top(self, query: torch.Tensor, k: int, exclude: set[int]) -> list[tuple[str, float]]:
        """The k rows most cosine-similar to ``query`` (dim,), skipping rows in ``exclude``."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        q = torch.nn.functional.normalize(query.float(), dim=0)
        with torch.inference_mode():
            sims = self.unit_vectors @ q  # (V,)
            if exclude:
                sims[torch.tensor(sorted(exclude), device=self.device)] = -float("inf")
            top = torch.topk(sims, min(k, len(self.words) - len(exclude)))
        return [(self.words[i], float(s)) for s, i in zip(top.values.tolist(), top.indices.tolist())]

    def neighbours(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` nearest vocabulary words by cosine, excluding ``word`` itself.

        Raises:
            OutOfVocabularyError: ``word`` has no vector.
        """
        i = self.index(word)
        return self._top(self._query(word), k, set() if i is None else {i})

    def analogy(self, a: str, b: str, c: str, k: int = 5) -> list[tuple[str, float]]:
        """3CosAdd: ``a`` is to ``b`` as ``c`` is to ? (e.g. man : king :: woman : queen).

        Ranks vocabulary words x by cos(x, b̂ − â + ĉ) over unit vectors (Mikolov et al. 2013;
        Levy & Goldberg 2014), excluding the three input words. Returns (word, cosine) pairs.
        """
        vecs = [torch.nn.functional.normalize(self._query(w).float(), dim=0) for w in (a, b, c)]
        target = vecs[1] - vecs[0] + vecs[2]
        exclude = {i for i in (self.index(a), self.index(b), self.index(c)) if i is not None}
        return self._top(target, k, exclude)
