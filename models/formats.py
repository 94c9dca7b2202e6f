"""Standard static-embedding files: word2vec text/binary, GloVe text, fastText ``.vec``; format sniffing.

=================  =====================================================================
format             layout
=================  =====================================================================
``word2vec``       text; line 1 ``<count> <dim>``, then ``word v1 ... vdim`` per line
``word2vec-bin``   line 1 ``<count> <dim>\\n``, then per entry ``word<space>`` + ``dim``
                   little-endian float32 (word2vec.c also writes a ``\\n`` after each vector)
``glove``          text without a header: ``word v1 ... vdim`` per line
``vec``            fastText's ``.vec``: the word2vec text format (header + one word a line)
``fasttext-bin``   Facebook's fastText ``.bin``; ``gensim``: a gensim ``.save()`` pickle (both
                   loaded through gensim by ``models.static``)
=================  =====================================================================

:func:`guess_format` decides by content (magic bytes, header, first row); the name only picks
between equal text formats (``.vec``); gzip files are refused (decompress them first). Writing
goes through gensim's ``save_word2vec_format`` (the reference writer). Reading is our own parser:
gensim's reports a truncated binary without a position and ignores entries beyond the header's
count, while every malformed file (empty, truncated, header disagreeing with the rows, nan/inf, a
repeated word) must raise :class:`~models.base.ModelLoadError` naming the file and the line
(binary files: entry *k* is line *k* + 1, plus the byte offset).
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
from functools import partial
from pathlib import Path

import numpy as np

from models.errors import ModelLoadError

FORMATS = ("word2vec", "word2vec-bin", "glove", "vec")  # read and written here
ALL_FORMATS = FORMATS + ("fasttext-bin", "gensim")  # the last two: models.static, via gensim
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")
_BAD_WORD_CHARS = frozenset(" \t\n\r")
_CHUNK = 8 * 2**20


def _error(path: Path | str, line: int | None, msg: str) -> ModelLoadError:
    where = f"{path}" if line is None else f"{path}, line {line}"
    return ModelLoadError(f"Malformed embedding file {where}: {msg}")


def check_file(path: str | Path) -> Path:
    """``path`` if it is a non-empty regular file, else ModelLoadError saying what it is."""
    path = Path(path)
    try:
        mode, size = (st := path.stat()).st_mode, st.st_size
    except OSError as exc:
        raise ModelLoadError(f"Cannot read embedding file {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise ModelLoadError(
            f"{path} is a directory, not a vectors file: pass the file inside it "
            "(models.static.find_vector_file finds it when it is the only one)."
        )
    if not stat.S_ISREG(mode):
        raise ModelLoadError(f"Cannot read embedding file {path}: not a regular file.")
    if size == 0:
        raise _error(path, None, "empty file (0 bytes)")
    return path


def read_bytes(path: str | Path, limit: int = -1) -> bytes:
    """The first ``limit`` bytes (all: -1) of the checked file."""
    with open(check_file(path), "rb") as fh:
        return fh.read(limit)


def _row_fields(line: str) -> list[str]:
    """A text row's fields as the parser splits them: tabs read as spaces, split on the space only (a word may hold
    other whitespace, e.g. a non-breaking space, which ``str.split()`` would cut)."""
    return line.rstrip("\r\n").replace("\t", " ").rstrip(" ").split(" ")


def is_vector_row(line: bytes) -> bool:
    """``word v1 ... vdim`` with at least one value, all numbers."""
    try:
        parts = _row_fields(line.decode("utf-8"))
    except UnicodeDecodeError:
        return False
    return len(parts) >= 2 and bool(parts[0]) and all(_is_float(v) for v in parts[1:])


def _is_float(s: str) -> bool:
    try:
        return float(s) is not None
    except ValueError:
        return False


def _is_text(data: bytes) -> bool:
    """Text, not packed floats: no NUL byte, valid UTF-8 (final=False: a character cut at 4 KiB is fine)."""
    try:
        return b"\0" not in data[:4096] and codecs.utf_8_decode(data[:4096], "strict", False) is not None
    except UnicodeDecodeError:
        return False


def guess_format(path: str | Path) -> str:
    """One of :data:`ALL_FORMATS`, from the file's first 64 KiB (see the module doc); ModelLoadError
    for a missing, empty or directory path or content that is none of them."""
    path = check_file(path)
    head = read_bytes(path, 2**16)
    if head[:4] == FASTTEXT_MAGIC:
        return "fasttext-bin"
    if head[:2] == b"\x1f\x8b":
        raise ModelLoadError(f"{path} is gzip-compressed: decompress it first (gunzip -k {path}) and load the result.")
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "gensim"  # a pickle: PROTO opcode, protocol 2-5
    first, _, rest = head.removeprefix(codecs.BOM_UTF8).partition(b"\n")
    parts = first.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        if not _is_text(rest):
            return "word2vec-bin"
        return "vec" if path.suffix.lower() == ".vec" else "word2vec"
    if is_vector_row(first):
        return "glove"
    try:
        first.decode("utf-8")
    except UnicodeDecodeError as exc:  # a GloVe row but for a word in another encoding: say so, not the format
        if is_vector_row(first.decode("utf-8", "replace").encode("utf-8")):
            raise _error(path, 1, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    raise ModelLoadError(
        f"Cannot tell the format of {path}: line 1 ({len(parts)} field(s)) is neither a word2vec header "
        "'<count> <dim>' nor a GloVe row 'word v1 ... vdim', and the file is no fastText binary (2017+) "
        "or gensim file. The format is read from the file itself: give a GloVe text file (word v1 … vdim per line), "
        "a word2vec text or binary file or a fastText .vec (line 1: '<count> <dim>'), a fastText .bin or a gensim "
        f"file (from Python, load_vectors_file's format argument takes one of {', '.join(ALL_FORMATS)})."
    )


def read_vectors(path: str | Path, fmt: str | None = None) -> tuple[list[str], np.ndarray]:
    """Read ``path`` in ``fmt`` (one of :data:`FORMATS`; sniffed when None): V unique words in file
    order and their (V, dim) float32 vectors. ModelLoadError (file and line) for any malformed file."""
    fmt = fmt or guess_format(path)
    if fmt == "word2vec-bin":
        return read_word2vec_binary(path)
    if fmt in ("word2vec", "vec", "glove"):
        return read_word2vec_text(path, header=fmt != "glove")
    if fmt in ALL_FORMATS:
        raise ModelLoadError(f"{path} is a {fmt} file: load it with models.static.load_vectors_file.")
    raise ValueError(f"unknown embedding format {fmt!r}; choose from {', '.join(ALL_FORMATS)}")


def parse_vectors_header(path: Path, raw: bytes) -> tuple[int, int]:
    """(count, dim) from a word2vec header line ``<count> <dim>``; ModelLoadError naming line 1 otherwise."""
    parts = raw.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise _error(path, 1, f"expected a header '<count> <dim>', found {len(parts)} field(s)")
    count, dim = int(parts[0]), int(parts[1])
    if dim < 1:
        raise _error(path, 1, f"header declares dimension {dim}")
    return count, dim


class _Collector:
    """Accumulates (word, vector) pairs; a repeated word is an error naming both lines. The vectors go into blocks of
    ``BLOCK`` rows, copied into the matrix block by block at the end: an array per row and one ``np.stack`` of them
    had held the matrix about three times over (2 M × 20 floats: 1.66 GB for a 160 MB matrix)."""

    BLOCK = 65_536

    def __init__(self, path: Path) -> None:
        self.path = path
        self.words: list[str] = []
        self.blocks: list[np.ndarray] = []
        self.line_of: dict[str, int] = {}

    def add(self, word: str, vec: np.ndarray, line: int) -> None:
        if not np.isfinite(vec).all():
            raise _error(self.path, line, f"non-finite value (nan/inf) in the vector of {word[:40]!r}")
        first = self.line_of.setdefault(word, line)
        if first != line:
            raise _error(
                self.path,
                line,
                f"the word {word[:40]!r} is repeated (first at line {first}); a vectors file has one vector per word",
            )
        row = len(self.words) % self.BLOCK
        if row == 0:
            self.blocks.append(np.empty((self.BLOCK, len(vec)), np.float32))
        self.blocks[-1][row] = vec
        self.words.append(word)

    def result(self) -> tuple[list[str], np.ndarray]:
        if not self.words:
            raise _error(self.path, None, "no vectors in the file")
        n = len(self.words)
        matrix = np.empty((n, self.blocks[0].shape[1]), np.float32)
        for k in range(len(self.blocks)):
            start = k * self.BLOCK
            matrix[start : start + self.BLOCK] = self.blocks[k][: n - start]
            self.blocks[k] = self.blocks[k][:0]  # each block freed once copied: the peak is the matrix and one block
        self.blocks = []
        return self.words, matrix


def read_word2vec_text(path: str | Path, header: bool = True) -> tuple[list[str], np.ndarray]:
    """word2vec text / fastText ``.vec`` (``header=True``) or GloVe text (``header=False``)."""
    path = check_file(path)
    count, dim, dim_from = -1, -1, "the header (line 1)"
    out = _Collector(path)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1:  # an editor's byte-order mark is no part of the header or the first word
                raw = raw.removeprefix(codecs.BOM_UTF8)
            if lineno == 1 and header:
                count, dim = parse_vectors_header(path, raw)
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _error(path, lineno, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue  # blank lines (e.g. at the end) carry nothing
            word, *values = _row_fields(line)  # tab-separated fields read as spaced
            if not word:
                raise _error(path, lineno, "line starts with a space (empty word)")
            if dim < 0:  # GloVe: the first row fixes the dimension
                dim, dim_from = len(values), f"line {lineno}"
                if dim == 0:
                    raise _error(path, lineno, "its word has no values")
            extra = len(values) - dim
            if dim > 0 and extra > 0 and not all(_is_float(v) for v in values[:extra]):
                # a word with spaces (GloVe 840B's ". . ."): the row's last ``dim`` fields are the vector
                word, values = " ".join([word, *values[:extra]]), values[extra:]
            if len(values) != dim:
                raise _error(
                    path, lineno, f"expected {dim} values (as in {dim_from}) after its word, found {len(values)}"
                )
            if header and len(out.words) == count:
                raise _error(path, lineno, f"more vectors than the {count} declared in the header (line 1)")
            try:
                vec = np.array(values, dtype=np.float32)
            except ValueError:
                bad = next(k for k, v in enumerate(values, start=1) if not _is_float(v))  # said by position: a
                # file typed by mistake (a password list) is not quoted back to whoever named it (the app's form)
                raise _error(path, lineno, f"value {bad} (field {bad + 1}) is not a number") from None
            out.add(word, vec, lineno)
    if header and len(out.words) != count:
        raise _error(
            path,
            None,
            f"header (line 1) declares {count} vectors but the file has {len(out.words)} "
            f"(truncated after line {len(out.words) + 1}?)",
        )
    return out.result()


def read_header(path: str | Path, fmt: str) -> tuple[int, int]:
    """(vocab size, dim) of a :data:`FORMATS` file without parsing vectors: the word2vec header;
    GloVe: dim from line 1, vocab = the non-empty lines, counted on 8 MiB chunks (~1 s per GB)."""
    with open(check_file(path), "rb") as fh:
        first = fh.readline().removeprefix(codecs.BOM_UTF8)
        if fmt != "glove":
            return parse_vectors_header(path, first)
        if not is_vector_row(first):
            raise _error(path, 1, "expected a GloVe row 'word v1 ... vdim' of numbers after the word")
        lines, prev_newline = 1, True
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            newline = np.frombuffer(chunk, np.uint8) == 10
            starts = np.concatenate([[prev_newline], newline[:-1]])  # byte i begins a line
            lines += int(np.count_nonzero(starts & ~newline))  # ... which is not empty
            prev_newline = bool(newline[-1])
    return lines, len(_row_fields(first.decode("utf-8"))) - 1


def read_word2vec_binary(path: str | Path) -> tuple[list[str], np.ndarray]:
    """word2vec binary (gensim's and word2vec.c's, with or without a newline after each vector)."""
    path = Path(path)
    data = read_bytes(path)
    nl = data.find(b"\n")
    if nl < 0:
        raise _error(path, 1, "no header line '<count> <dim>'")
    count, dim = parse_vectors_header(path, data[:nl])
    width = 4 * dim
    out = _Collector(path)
    pos = nl + 1
    for i in range(count):
        lineno = i + 2  # the header is line 1, entry i is "line" i + 2
        while pos < len(data) and data[pos : pos + 1] in (b"\n", b"\r"):
            pos += 1
        if pos >= len(data):
            raise _error(
                path,
                lineno,
                f"file truncated: header declares {count} vectors, found {i} (file ends at byte {len(data)})",
            )
        sp = data.find(b" ", pos, pos + 10_000)
        if sp < 0:
            raise _error(path, lineno, f"no word terminated by a space at byte {pos}")
        try:
            word = data[pos:sp].decode("utf-8")
        except UnicodeDecodeError:
            raise _error(
                path, lineno, f"word at byte {pos} is not valid UTF-8 (is this really the binary format?)"
            ) from None
        if not word:
            raise _error(path, lineno, f"empty word at byte {pos}")
        if sp + 1 + width > len(data):
            raise _error(
                path,
                lineno,
                f"file truncated inside the vector of {word[:40]!r} "
                f"(needs {width} bytes at byte {sp + 1}, file ends at byte {len(data)})",
            )
        out.add(word, np.frombuffer(data, dtype="<f4", count=dim, offset=sp + 1), lineno)
        pos = sp + 1 + width
    if data[pos:].strip(b"\r\n"):
        raise _error(path, count + 2, f"data after the {count} vectors declared in the header (byte {pos})")
    return out.result()


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
    """Write ``words`` / ``vectors`` ((V, dim) float) to ``path`` in ``fmt`` (one of :data:`FORMATS`) via gensim.

    Text formats store each float32 with its shortest round-trip representation, so reading the
    file back gives the identical matrix.
    """
    # lazy: gensim takes seconds to import; reading (every model load, `models list`) never needs it.
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
    os.replace(tmp, path)  # never leave a half-written file under the real name
    return path


# The format the lab's own static checkpoints are saved in (``models.static.save_static_dir``).
write_word2vec_binary = partial(write_vectors, fmt="word2vec-bin")
