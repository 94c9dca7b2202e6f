"""Standard static-embedding file formats: word2vec text/binary, GloVe text, fastText ``.vec``.

=================  =====================================================================
format             layout
=================  =====================================================================
``word2vec``       text; line 1 ``<count> <dim>``, then ``word v1 ... vdim`` per line
``word2vec-bin``   line 1 ``<count> <dim>\\n``, then per entry ``word<space>`` + ``dim``
                   little-endian float32 (word2vec.c also writes a ``\\n`` after each vector)
``glove``          text without a header: ``word v1 ... vdim`` per line
``vec``            fastText's ``.vec``: the word2vec text format (header + one word a line)
=================  =====================================================================

Writing goes through gensim's ``KeyedVectors.save_word2vec_format`` (the reference writer, also
used by gensim users to exchange files). Reading is our own validating parser: gensim's reader
reports a truncated binary file without a position and silently ignores entries beyond the
header's count, while we want every malformed or truncated file to raise
:class:`~models.base.ModelLoadError` naming the file and the line (for binary files: the entry
counted as a line, header = line 1, plus the byte offset).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from models.base import ModelLoadError

logger = logging.getLogger(__name__)

FORMATS = ("word2vec", "word2vec-bin", "glove", "vec")
_SUFFIX_FORMAT = {".bin": "word2vec-bin", ".vec": "vec", ".w2v": "word2vec"}
_BAD_WORD_CHARS = frozenset(" \t\n\r")


def _error(path: Path | str, line: int | None, msg: str) -> ModelLoadError:
    where = f"{path}" if line is None else f"{path}, line {line}"
    return ModelLoadError(f"Malformed embedding file {where}: {msg}")


def guess_format(path: str | Path) -> str:
    """Format from the suffix (.bin, .vec, .w2v); for ``.txt`` sniff whether line 1 is a header."""
    path = Path(path)
    fmt = _SUFFIX_FORMAT.get(path.suffix.lower())
    if fmt:
        return fmt
    try:
        with open(path, "rb") as fh:
            first = fh.readline().split()
    except OSError as exc:
        raise ModelLoadError(f"Cannot read embedding file {path}: {exc}") from exc
    if len(first) == 2 and all(tok.isdigit() for tok in first):
        return "word2vec"
    return "glove"


def read_vectors(path: str | Path, fmt: str | None = None) -> tuple[list[str], np.ndarray]:
    """Read ``path`` in ``fmt`` (guessed from the name when None).

    Returns:
        words: list of V unique words, in file order (a repeated word keeps its first vector).
        vectors: (V, dim) float32.
    Raises:
        ModelLoadError: missing, malformed or truncated file (message names file and line).
    """
    fmt = fmt or guess_format(path)
    if fmt == "word2vec-bin":
        return read_word2vec_binary(path)
    if fmt in ("word2vec", "vec"):
        return read_word2vec_text(path, header=True)
    if fmt == "glove":
        return read_word2vec_text(path, header=False)
    raise ValueError(f"unknown embedding format {fmt!r}; choose from {', '.join(FORMATS)}")


def read_glove_text(path: str | Path) -> tuple[list[str], np.ndarray]:
    return read_word2vec_text(path, header=False)


def read_fasttext_vec(path: str | Path) -> tuple[list[str], np.ndarray]:
    return read_word2vec_text(path, header=True)


def parse_vectors_header(path: Path, raw: bytes) -> tuple[int, int]:
    """(count, dim) from a word2vec header line ``<count> <dim>``; ModelLoadError naming line 1 otherwise."""
    parts = raw.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise _error(path, 1, f"expected a header '<count> <dim>', found {raw[:80]!r}")
    count, dim = int(parts[0]), int(parts[1])
    if dim < 1:
        raise _error(path, 1, f"header declares dimension {dim}")
    return count, dim


class _Collector:
    """Accumulates (word, vector) pairs, keeping the first vector of a repeated word."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.words: list[str] = []
        self.rows: list[np.ndarray] = []
        self.seen: set[str] = set()
        self.duplicates = 0

    def add(self, word: str, vec: np.ndarray) -> None:
        if word in self.seen:
            self.duplicates += 1
            return
        self.seen.add(word)
        self.words.append(word)
        self.rows.append(vec)

    def result(self, dim: int) -> tuple[list[str], np.ndarray]:
        if self.duplicates:
            logger.warning("%s: %d repeated words ignored (first vector kept)", self.path, self.duplicates)
        vectors = np.stack(self.rows).astype(np.float32, copy=False) if self.rows else np.zeros((0, dim), np.float32)
        return self.words, vectors


def read_word2vec_text(path: str | Path, header: bool = True) -> tuple[list[str], np.ndarray]:
    """word2vec text / fastText ``.vec`` (``header=True``) or GloVe text (``header=False``)."""
    path = Path(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ModelLoadError(f"Cannot read embedding file {path}: {exc}") from exc
    count, dim = -1, -1
    out = _Collector(path)
    n_entries = 0
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and header:
                count, dim = parse_vectors_header(path, raw)
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _error(path, lineno, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            line = line.rstrip("\r\n").rstrip(" ")
            if not line.strip():
                continue                         # blank lines (e.g. at the end) carry nothing
            parts = line.split(" ")
            word, values = parts[0], parts[1:]
            if not word:
                raise _error(path, lineno, "line starts with a space (empty word)")
            if dim < 0:                          # GloVe: the first line fixes the dimension
                dim = len(values)
                if dim == 0:
                    raise _error(path, lineno, f"word {word!r} has no values")
            if len(values) != dim:
                raise _error(path, lineno, f"expected {dim} values after the word {word[:40]!r}, found {len(values)}")
            if header and n_entries == count:
                raise _error(path, lineno, f"more vectors than the {count} declared in the header (line 1)")
            try:
                vec = np.array(values, dtype=np.float32)
            except ValueError:
                bad = next(v for v in values if not _is_float(v))
                raise _error(path, lineno, f"value {bad[:40]!r} is not a number") from None
            if not np.isfinite(vec).all():
                raise _error(path, lineno, "non-finite value (nan/inf)")
            out.add(word, vec)
            n_entries += 1
    if header:
        if count < 0:
            raise _error(path, 1, "empty file (no header)")
        if n_entries != count:
            raise _error(path, None, f"header (line 1) declares {count} vectors but the file has {n_entries} "
                                     f"(truncated after line {n_entries + 1}?)")
    elif n_entries == 0:
        raise _error(path, 1, "empty file (no vectors)")
    return out.result(dim)


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def read_word2vec_binary(path: str | Path) -> tuple[list[str], np.ndarray]:
    """word2vec binary (gensim's and word2vec.c's, with or without a newline after each vector)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelLoadError(f"Cannot read embedding file {path}: {exc}") from exc
    nl = data.find(b"\n")
    if nl < 0:
        raise _error(path, 1, "no header line '<count> <dim>'")
    count, dim = parse_vectors_header(path, data[:nl])
    width = 4 * dim
    out = _Collector(path)
    pos = nl + 1
    for i in range(count):
        lineno = i + 2                            # the header is line 1, entry i is "line" i + 2
        while pos < len(data) and data[pos:pos + 1] in (b"\n", b"\r"):
            pos += 1
        if pos >= len(data):
            raise _error(path, lineno, f"file truncated: header declares {count} vectors, found {i} "
                                       f"(file ends at byte {len(data)})")
        sp = data.find(b" ", pos, pos + 10_000)
        if sp < 0:
            raise _error(path, lineno, f"no word terminated by a space at byte {pos}")
        try:
            word = data[pos:sp].decode("utf-8")
        except UnicodeDecodeError:
            raise _error(path, lineno, f"word at byte {pos} is not valid UTF-8 (is this really the binary format?)") from None
        if not word:
            raise _error(path, lineno, f"empty word at byte {pos}")
        if sp + 1 + width > len(data):
            raise _error(path, lineno, f"file truncated inside the vector of {word[:40]!r} "
                                       f"(needs {width} bytes at byte {sp + 1}, file ends at byte {len(data)})")
        vec = np.frombuffer(data, dtype="<f4", count=dim, offset=sp + 1)
        if not np.isfinite(vec).all():
            raise _error(path, lineno, f"non-finite value in the vector of {word[:40]!r} (is this really the binary format?)")
        out.add(word, vec)
        pos = sp + 1 + width
    if data[pos:].strip(b"\r\n"):
        raise _error(path, count + 2, f"data after the {count} vectors declared in the header (byte {pos})")
    return out.result(dim)


# --------------------------------------------------------------------------- writing

def _check_for_writing(words: list[str], vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise ValueError(f"need a (len(words)={len(words)}, dim) matrix, got shape {vectors.shape}")
    if vectors.shape[1] < 1:
        raise ValueError("vectors must have at least one dimension")
    if len(set(words)) != len(words):
        raise ValueError("words must be unique")
    for w in words:
        if not w or _BAD_WORD_CHARS.intersection(w):
            raise ValueError(f"word {w!r} cannot be stored in a word2vec/GloVe file (empty or contains whitespace)")
    if not np.isfinite(vectors).all():
        raise ValueError("vectors contain nan/inf")
    return vectors


def write_vectors(path: str | Path, words: list[str], vectors: np.ndarray, fmt: str) -> Path:
    """Write ``words`` / ``vectors`` ((V, dim) float) to ``path`` in ``fmt`` via gensim.

    Text formats store each float32 with its shortest round-trip representation, so reading the
    file back gives the identical matrix.
    """
    # Imported here: gensim takes seconds to import; reading (every model load, `models list`) never needs it.
    from gensim.models import KeyedVectors

    if fmt not in FORMATS:
        raise ValueError(f"unknown embedding format {fmt!r}; choose from {', '.join(FORMATS)}")
    words = list(words)
    vectors = _check_for_writing(words, vectors)
    kv = KeyedVectors(vector_size=vectors.shape[1], dtype=np.float32)
    kv.add_vectors(words, vectors)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    # gensim warns that our vectors carry no word counts (it then keeps our order, as we want).
    kv_logger = logging.getLogger("gensim.models.keyedvectors")
    level = kv_logger.level
    kv_logger.setLevel(logging.ERROR)
    try:
        kv.save_word2vec_format(str(tmp), binary=fmt == "word2vec-bin", write_header=fmt != "glove")
    finally:
        kv_logger.setLevel(level)
    os.replace(tmp, path)                         # never leave a half-written file under the real name
    return path


def write_word2vec_text(path, words, vectors) -> Path:
    return write_vectors(path, words, vectors, "word2vec")


def write_word2vec_binary(path, words, vectors) -> Path:
    return write_vectors(path, words, vectors, "word2vec-bin")


def write_glove_text(path, words, vectors) -> Path:
    return write_vectors(path, words, vectors, "glove")


def write_fasttext_vec(path, words, vectors) -> Path:
    return write_vectors(path, words, vectors, "vec")
