"""Any static vectors file as a model: load, inspect from the header, find in a folder.

The formats of ``models.formats`` and, through gensim, fastText ``.bin`` (walked first by
:func:`check_fasttext_bin`: gensim's loader never ends on a file cut inside its dictionary; subword
buckets kept, so unknown words get fastText's n-gram vector) and gensim ``.save()`` files. Those are
pickles, which run code named in the file: refused unless the caller passes ``allow_pickle=True`` (no
code from a planted file), and even then unpickled with ``find_class`` limited to gensim's vector
classes and numpy's arrays, and refused where they name a pickle saved beside them (``_check_specials``).
docs/models.md, "Vector files".
"""

from __future__ import annotations

import mmap
import pickle
import struct
from pathlib import Path

import torch

from models.base import ModelLoadError
from models.formats import (
    ALL_FORMATS,
    FASTTEXT_MAGIC,
    FORMATS,
    check_file,
    guess_format,
    read_bytes,
    read_header,
    read_vectors,
)
from models.spec import STATIC
from models.static_embedder import StaticEmbedder, keyed_vectors_arrays

PICKLE_REFUSAL = (
    "{path} is a gensim .save() file, i.e. a Python pickle, which can run code named in the file: refused. "
    "Load pickles only from sources you trust. If you trust this one, register it with "
    "`python -m models add NAME {path} --allow-pickle` (option allow_pickle=true): this lab then unpickles "
    "it with a restricted loader that accepts only gensim's vector classes and numpy arrays, never other "
    "code. Then keep a copy that holds only data: models.static.save_static_dir(load_vectors_file('{path}', "
    "allow_pickle=True), DIR, {{}}) (DIR a new folder) writes word2vec binary vectors (and a fastText model's "
    "subword n-grams as safetensors). Do not open it with gensim's own SaveLoad.load / KeyedVectors.load: they "
    "unpickle without any restriction and would run a planted payload."
)
# The only imports a gensim vectors pickle makes (gensim 3.x-4.4, numpy 1-2, Python 2 and 3 pickles).
_PICKLE_IMPORTS = {
    tuple(entry.split(":"))
    for entry in [
        "gensim.models.keyedvectors:KeyedVectors",
        "gensim.models.keyedvectors:Word2VecKeyedVectors",
        "gensim.models.keyedvectors:FastTextKeyedVectors",
        "gensim.models.keyedvectors:Vocab",
        "gensim.models.keyedvectors:CompatVocab",
        "gensim.models.fasttext:FastTextKeyedVectors",
        "gensim.models.fasttext:FastText",
        "gensim.models.fasttext:FastTextVocab",
        "gensim.models.fasttext:FastTextTrainables",
        "gensim.models.word2vec:Word2Vec",
        "gensim.models.word2vec:Word2VecVocab",
        "gensim.models.word2vec:Word2VecTrainables",
        "gensim.models.word2vec:Vocab",
        "gensim.utils:call_on_class_only",
        "numpy:ndarray",
        "numpy:dtype",
        "numpy.core.multiarray:_reconstruct",
        "numpy._core.multiarray:_reconstruct",
        "numpy.core.multiarray:scalar",
        "numpy._core.multiarray:scalar",
        "numpy.random:__RandomState_ctor",
        "numpy.random._pickle:__randomstate_ctor",
        "numpy.random._pickle:__bit_generator_ctor",
        "numpy.random._mt19937:MT19937",
        "collections:defaultdict",
        "collections:OrderedDict",
        "_codecs:encode",
        "builtins:int",
        "builtins:float",
        "builtins:hash",
        "__builtin__:int",
        "__builtin__:long",
        "__builtin__:float",
        "__builtin__:hash",
    ]
}
_FT_HEADER = struct.Struct("<2i12id")  # magic, version, dim ws epoch minCount neg wordNgrams loss model bucket
#                                         minn maxn lrUpdateRate (12 int32), t (float64): fastText's args.cc
_FT_DICT = struct.Struct("<3i2q")  # size, nwords, nlabels, ntokens, pruneidx_size
_FT_MATRIX = struct.Struct("<?2q")  # quantized, rows, cols (then rows * cols float32)


class _GensimUnpickler(pickle.Unpickler):
    """Every import a pickle asks for (GLOBAL, STACK_GLOBAL, INST, extension codes) goes through
    ``find_class``: only those of a gensim vectors file are allowed."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _PICKLE_IMPORTS:
            raise pickle.UnpicklingError(f"it imports {module}.{name}, which a gensim vectors file never does")
        return super().find_class(module, name)


def _check_specials(obj) -> None:
    """What gensim's ``SaveLoad._load_specials`` will read beside the file, checked before it does: arrays
    (``x.kv.vectors.npy``, read by numpy, which refuses pickles) are fine; a sparse matrix (``__scipys``) is a pickle
    of its own that gensim unpickles unrestricted. No vectors file has one, so a file that names one is refused."""
    if getattr(obj, "__scipys", []):
        raise pickle.UnpicklingError("it names a sparse matrix saved beside it, a pickle of its own")
    for attrib in getattr(obj, "__recursive_saveloads", []):
        _check_specials(getattr(obj, attrib))


def _read_gensim(path: Path, allow_pickle: bool):
    if not allow_pickle:
        raise ModelLoadError(PICKLE_REFUSAL.format(path=path))
    from gensim.models import KeyedVectors  # lazy: gensim takes seconds to import, only these files need it
    from gensim.utils import SaveLoad  # lazy: gensim

    try:
        with open(path, "rb") as fh:
            obj = _GensimUnpickler(fh, encoding="latin1").load()  # gensim's own unpickle() settings
        _check_specials(obj)
        # The rest of gensim's SaveLoad.load: arrays saved beside the file, and the class's own upgrades.
        obj._load_specials(str(path), None, *SaveLoad._adapt_by_suffix(str(path)))
    except Exception as exc:  # a refused import, a bad pickle, a missing .npy beside it
        raise ModelLoadError(f"Cannot load gensim file {path}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(kv := getattr(obj, "wv", obj), KeyedVectors):
        raise ModelLoadError(f"{path} holds a {type(obj).__name__}, not word vectors.")
    return kv


def fasttext_header(path: Path, head: bytes) -> dict:
    """Shape of a fastText ``.bin`` from its first 92 bytes; ModelLoadError for what gensim cannot load."""
    if len(head) < _FT_HEADER.size + _FT_DICT.size or head[:4] != FASTTEXT_MAGIC:
        raise ModelLoadError(f"{path}: not a fastText binary (truncated header or no magic number).")
    v = _FT_HEADER.unpack_from(head)
    size, nwords, nlabels, _, prune = _FT_DICT.unpack_from(head, _FT_HEADER.size)
    if nlabels > 0:
        raise ModelLoadError(f"{path}: a supervised fastText model ({nlabels} labels), not word vectors.")
    if v[2] < 1 or nwords < 1 or size != nwords or v[10] < 0:
        raise ModelLoadError(
            f"{path}: corrupt fastText header (dim {v[2]}, {size} entries, {nwords} words, bucket {v[10]})."
        )
    return {
        "version": v[1],
        "dim": v[2],
        "epoch": v[4],
        "bucket": v[10],
        "min_n": v[11],
        "max_n": v[12],
        "nwords": nwords,
        "pruneidx": max(prune, 0),
    }


def check_fasttext_bin(path: str | Path) -> dict:
    """Walk a fastText ``.bin`` (words, matrix shapes, file size; no floats parsed): its header dict,
    or ModelLoadError naming the file, entry and byte of a cut, repeated or non-UTF-8 word, a
    quantized (``.ftz``) or truncated matrix, or trailing data."""
    path = check_file(path)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        h = fasttext_header(path, data[: _FT_HEADER.size + _FT_DICT.size])
        pos, seen = _FT_HEADER.size + _FT_DICT.size, set()
        for i in range(1, h["nwords"] + 1):
            if (end := data.find(b"\0", pos)) < 0 or end + 10 > len(data):
                raise ModelLoadError(f"{path}: truncated in the dictionary, word {i} of {h['nwords']} (byte {pos}).")
            try:
                word = data[pos:end].decode("utf-8")
            except UnicodeDecodeError:
                raise ModelLoadError(f"{path}: word {i} (byte {pos}) is not valid UTF-8.") from None
            if word in seen:
                raise ModelLoadError(f"{path}: word {i} {word[:40]!r} (byte {pos}) is repeated.")
            seen.add(word)
            pos = end + 10  # NUL, int64 count, int8 entry type
        pos += 8 * h["pruneidx"]
        for what, rows in (("input", h["nwords"] + h["bucket"]), ("output", None)):
            if pos + _FT_MATRIX.size > len(data):
                raise ModelLoadError(f"{path}: truncated before the {what} matrix (byte {pos}).")
            quantized, m, n = _FT_MATRIX.unpack_from(data, pos)
            if quantized:
                raise ModelLoadError(f"{path}: a quantized fastText model (.ftz); only full .bin models load.")
            if (rows is not None and m != rows) or n < 1 or (what == "input" and n != h["dim"]):
                raise ModelLoadError(f"{path}: the {what} matrix is {m} x {n}, the header says {rows} x {h['dim']}.")
            if (pos := pos + _FT_MATRIX.size + 4 * m * n) > len(data):
                raise ModelLoadError(f"{path}: truncated in the {what} matrix (needs {pos} bytes, has {len(data)}).")
        if pos != len(data):
            raise ModelLoadError(f"{path}: {len(data) - pos} bytes of unknown data after the matrices.")
    return h


def _read_fasttext_bin(path: Path):
    check_fasttext_bin(path)
    from gensim.models.fasttext import load_facebook_vectors  # lazy: gensim takes seconds to import

    try:
        kv = load_facebook_vectors(str(path))
    except Exception as exc:  # gensim's reader raises struct/assertion/value errors
        raise ModelLoadError(f"Cannot load fastText binary {path}: {type(exc).__name__}: {exc}") from exc
    if (eos := kv.key_to_index.get("</s>")) is not None:  # fastText gives its end-of-sentence token no
        kv.vectors[eos] = kv.vectors_vocab[eos]  # n-grams (Dictionary::initNgrams); gensim does
    return kv


def _format(path: Path, fmt: str | None) -> str:
    if fmt is not None and fmt not in ALL_FORMATS:
        raise ValueError(f"unknown vectors format {fmt!r}; choose from {', '.join(ALL_FORMATS)}")
    return fmt or guess_format(path)


def load_vectors_file(
    path: str | Path,
    fmt: str | None = None,
    name: str | None = None,
    device: str | torch.device | None = None,
    *,
    allow_pickle: bool = False,
) -> StaticEmbedder:
    """Any vectors file (``models.formats.ALL_FORMATS``; ``fmt`` default: from the content) as an embedder.

    name: default the file name without its extension; allow_pickle: load a gensim ``.save()`` file (a
    pickle, see the module doc). ModelLoadError names the file (and line or entry) for any bad file.
    """
    path = check_file(path)
    if (fmt := _format(path, fmt)) in FORMATS:
        (words, vectors), ngrams = read_vectors(path, fmt), None
    else:
        kv = _read_fasttext_bin(path) if fmt == "fasttext-bin" else _read_gensim(path, allow_pickle)
        words, vectors, ngrams = keyed_vectors_arrays(kv, str(path))
    name = name or path.stem
    card = {
        "name": name,
        "family": STATIC.name,
        "format": fmt,
        "file": path.name,
        "vocab_size": len(words),
        "dim": int(vectors.shape[1]),
        "layers": 1,
        "params": int(vectors.size + (0 if ngrams is None else ngrams.vectors.size)),
    }
    if ngrams is not None:
        card["fasttext"] = {"min_n": ngrams.min_n, "max_n": ngrams.max_n, "bucket": ngrams.bucket}
    return StaticEmbedder(
        name,
        words,
        vectors,
        source=str(path),
        ngrams=ngrams,
        card=card,
        description=f"{fmt} vectors from {path.name}",
        device=device,
    )


def inspect_vectors(path: str | Path, fmt: str | None = None) -> dict:
    """What ``python -m models list`` shows about a vectors file, from its header only (nothing loaded).

    Returns ``{"format", "vocab_size", "dim", "size_bytes", "params", "fasttext"}``: params = numbers
    stored (words + n-gram buckets) × dim; fasttext = ``{"min_n", "max_n", "bucket"}`` or None. A
    gensim pickle is not opened, so its sizes are None.
    """
    path = check_file(path)
    fmt, vocab, dim, extra, fasttext = _format(path, fmt), None, None, 0, None
    if fmt == "fasttext-bin":
        h = fasttext_header(path, read_bytes(path, _FT_HEADER.size + _FT_DICT.size))
        vocab, dim, extra = h["nwords"], h["dim"], h["bucket"]
        fasttext = {"min_n": h["min_n"], "max_n": h["max_n"], "bucket": h["bucket"]}
    elif fmt in FORMATS:
        vocab, dim = read_header(path, fmt)
    return {
        "format": fmt,
        "vocab_size": vocab,
        "dim": dim,
        "size_bytes": path.stat().st_size,
        "params": None if vocab is None else (vocab + extra) * dim,
        "fasttext": fasttext,
    }


# Extension -> formats its content must have to count as a vectors file (None: the extension suffices).
_SUFFIX_FORMATS = {
    ".vec": None,
    ".w2v": None,
    ".kv": None,
    ".model": None,
    ".txt": {"word2vec", "glove"},
    ".bin": {"word2vec-bin", "fasttext-bin", "word2vec"},
}


def _is_vector_file(file: Path) -> bool:
    if file.suffix.lower() == ".gz":  # x.vec.gz, x.bin.gz: counted (loading asks to gunzip)
        return Path(file.stem).suffix.lower() in _SUFFIX_FORMATS
    allowed = _SUFFIX_FORMATS.get(file.suffix.lower(), set())
    try:
        return allowed is None or (bool(allowed) and guess_format(file) in allowed)
    except ModelLoadError:
        return False


def find_vector_file(directory: str | Path) -> Path | None:
    """The one vectors file in ``directory``, or None; ModelLoadError if it is no directory or holds several.

    ``.vec``, ``.w2v``, ``.kv`` and ``.model`` files count by name, also gzipped (``x.vec.gz``: loading
    asks to decompress it); ``.txt`` and ``.bin`` only when their content is a vectors format (not a
    README.txt or a pytorch_model.bin).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelLoadError(f"{directory}: {'not a directory' if directory.exists() else 'no such directory'}.")
    found = [
        f for f in sorted(directory.iterdir()) if f.is_file() and not f.name.startswith(".") and _is_vector_file(f)
    ]
    if len(found) > 1:
        raise ModelLoadError(
            f"{directory} holds {len(found)} vectors files ({', '.join(f.name for f in found)}): "
            "pass the one to load (a fastText .bin keeps the subword n-grams its .vec lacks)."
        )
    return found[0] if found else None
