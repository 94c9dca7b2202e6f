"""The feature cache's on-disk entries: where they live, their ``meta.json``, and whether a layer file is valid.

    cache_dir()/features/<fingerprint>/<dataset_key>/layer_<j>.npy   (num_rows, dim)
    cache_dir()/features/<fingerprint>/<dataset_key>/meta.json

Every file is written to a temporary name and moved into place with ``os.replace``; a layer file
that is missing, truncated, unreadable, disagrees with ``meta.json`` (shape, dtype, size, checksum)
or holds NaN/inf is reported by ``check_layer`` so that ``features.extract`` rebuilds it. The
checksum and the finiteness are checked once per file state and process (``features.checks``).
The names of those files are written only here (``entry_rel``, ``layer_file``, ``META_FILE``).

An entry records the versions of the libraries that computed it (the embedder's ``computed_with``: torch,
transformers, tokenizers and sentencepiece for a transformer); under other versions it is stale and rebuilt, as
under another model, since a new tokenizer or kernel can change the vectors while the model's files stay the same.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from corpora.errors import RequestError
from corpora.paths import cache_dir
from features.checks import remove_stale_temps, verify_layer_file

FORMAT_VERSION = 3  # 2: per-layer checksums; 3: library versions recorded (older entries are rebuilt once)
META_FILE = "meta.json"  # an entry's commit marker: written last, removed first; without it there is no entry


def sentences_hash(sentences: Sequence[Sequence[str]]) -> str:
    """SHA-256 of the sentences (words joined by U+001F, sentences by U+001E). A word holding either separator is
    refused (RequestError): ``["a\\x1fb"]`` and ``["a", "b"]`` would hash alike, and one be served the other's
    cached vectors."""
    h = hashlib.sha256()
    for n, s in enumerate(sentences):
        joined = "\x1f".join(s)
        if "\x1e" in joined or joined.count("\x1f") != max(len(s) - 1, 0):
            _refuse_separator(n, s)
        h.update(joined.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def _refuse_separator(n: int, sentence: Sequence[str]) -> None:
    i, word = next((i, w) for i, w in enumerate(sentence) if "\x1e" in w or "\x1f" in w)
    code = "U+001E" if "\x1e" in word else "U+001F"
    raise RequestError(
        f"Sentence {n + 1}, word {i + 1} ({word!r}) holds the control character {code} (a record or unit separator), "
        "which no word of text holds: remove it from the data."
    )


def keep_hash(keep: np.ndarray | None) -> str | None:
    """SHA-256 of the kept word indices (int64), as ``meta.json`` records them; None: every word kept."""
    return None if keep is None else hashlib.sha256(np.asarray(keep, dtype=np.int64).tobytes()).hexdigest()


def data_hash(*parts: Sequence[Sequence[str]]) -> str:
    """16 hex digits of SHA-256 over several sequences of string sequences (sentences, labels, ids): a
    run's data hash (``extra["data_hash"]``, shown in its run record), the same for the same content."""
    h = hashlib.sha256()
    for part in parts:
        h.update(sentences_hash(part).encode("ascii"))
    return h.hexdigest()[:16]


def _safe_key(dataset_key: str) -> str:
    if not dataset_key or any(c in dataset_key for c in "/\\\0") or dataset_key in {".", ".."}:
        raise ValueError(f"Bad dataset key {dataset_key!r}: use a plain name like 'semcor' or 'conll2000-test'.")
    return dataset_key


def entry_rel(fingerprint: str, dataset_key: str | None = None) -> str:
    """An entry's '/'-separated path below a cache root (``features/<fingerprint>/<key>``), the model's
    folder without a key: the same below a remote store's root (``cluster.storage``)."""
    base = f"features/{fingerprint}"
    return base if dataset_key is None else f"{base}/{_safe_key(dataset_key)}"


def feature_dir(fingerprint: str, dataset_key: str, root: Path | None = None) -> Path:
    root = root or cache_dir()
    _sweep_once(root / "features")
    return root / entry_rel(fingerprint, dataset_key)


@functools.cache
def _sweep_once(features: Path) -> None:
    """The first time a process opens the cache: remove the temporaries of every entry whose writer is gone
    (a run killed mid-write leaves one per layer; the next run may use another entry and never see them)."""
    with contextlib.suppress(OSError):
        remove_stale_temps(features, "*/*/*.tmp")


def layer_file(j: int) -> str:
    """The name of layer ``j``'s file in an entry."""
    return f"layer_{int(j)}.npy"


def meta_text(meta: dict) -> str:
    """``meta.json``'s text for ``meta`` (the same bytes wherever an entry is written or copied)."""
    return json.dumps(meta, indent=1)


def _expected_nbytes(path: Path) -> int | None:
    """Byte size a complete .npy file at ``path`` must have, from its own header (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}[
                version
            ]
            shape, _fortran, dtype = read_header(fh)
            header_len = fh.tell()
        return header_len + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    except Exception:  # noqa: BLE001 - any unreadable header means "rebuild"
        return None


@functools.cache
def _installed(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def library_versions(names: Sequence[str]) -> dict[str, str]:
    """{library: its installed release} for an entry's ``meta.json`` (read once per process)."""
    return {name: _installed(name) for name in names}


def libraries_problem(meta: dict, computed_with: Sequence[str] | None = None) -> str | None:
    """Why an entry was computed under other library releases than this process has (None: the same ones);
    ``computed_with`` (the embedder's, where known): the libraries the entry must record."""
    recorded = meta.get("libraries")
    if not isinstance(recorded, dict):
        return f"{META_FILE} names no library versions"
    if computed_with is not None and set(recorded) != set(computed_with):
        return f"it records the releases of {sorted(recorded)}, the model is computed with {sorted(computed_with)}"
    changed = [f"{k} {v} (now {now})" for k, v in sorted(recorded.items()) if (now := _installed(str(k))) != v]
    return f"computed under {', '.join(changed)}" if changed else None


def foreign(meta: dict, fingerprint: str, computed_with: Sequence[str] | None = None) -> str | None:
    """Why an entry's ``meta.json`` cannot serve model ``fingerprint`` here (None: it can): another format version,
    another model, other library releases (``computed_with``: the embedder's, where known)."""
    if meta.get("version") != FORMAT_VERSION:
        return f"format version {meta.get('version')} != {FORMAT_VERSION}"
    if meta.get("fingerprint") != fingerprint:
        return "written by another model version (fingerprint differs)"
    return libraries_problem(meta, computed_with)


def read_meta(directory: Path) -> dict | None:
    """The entry's ``meta.json`` as a dict; None when it is missing, unreadable or not a JSON object."""
    try:
        meta = json.loads((directory / META_FILE).read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def meta_problem(
    directory: Path,
    meta: dict | None,
    fingerprint: str,
    s_hash: str,
    num_words: int,
    keep_hash: str | None,
    dtype: str,
    dim: int,
    computed_with: Sequence[str] | None = None,
) -> str | None:
    """Why an entry's ``meta`` was written for another request (None: it matches, or there is no meta.json)."""
    if meta is None:
        return f"{META_FILE} is unreadable or not a JSON object" if (directory / META_FILE).exists() else None
    if why := foreign(meta, fingerprint, computed_with):
        return why
    if meta.get("sentences_hash") != s_hash or meta.get("num_words") != num_words:
        return "written for other sentences (content hash differs)"
    if meta.get("keep_hash") != keep_hash:
        return "written for another selection of words (keep differs)"
    if meta.get("dtype") != dtype or meta.get("dim") != dim:
        return f"dtype/dim {meta.get('dtype')}/{meta.get('dim')} differ from {dtype}/{dim}"
    return None


def _layer_record(meta: dict, j: int) -> dict | None:
    layers = meta.get("layers")
    entry = layers.get(str(j)) if isinstance(layers, dict) else None
    return entry if isinstance(entry, dict) else None


def stored(directory: Path, meta: dict, j: int) -> bool:
    """Whether ``meta.json`` lists layer ``j`` and its file has the listed size: the cheap part of
    ``check_layer`` (the checksum is verified when the layer is read)."""
    entry, path = _layer_record(meta, j), directory / layer_file(j)
    try:
        return entry is not None and path.is_file() and path.stat().st_size == entry.get("nbytes")
    except OSError:  # replaced or removed meanwhile (a reader holds no lock)
        return False


def check_layer(directory: Path, meta: dict | None, j: int) -> str | None:
    """Why layer ``j`` in ``directory`` cannot be used, or None when it is valid."""
    if meta is None:
        return "no readable meta.json"
    entry = _layer_record(meta, j)
    if entry is None:
        return f"layer {j} not in meta.json"
    path = directory / layer_file(j)
    if not path.is_file():
        return f"{path.name} missing"
    size = path.stat().st_size
    if size != entry.get("nbytes"):
        return f"{path.name} has {size} bytes, meta.json says {entry.get('nbytes')} (truncated or replaced)"
    if _expected_nbytes(path) != size:
        return f"{path.name} header does not match its size (corrupt)"
    try:
        arr = np.load(path, mmap_mode="r")
    except Exception as exc:  # noqa: BLE001
        return f"{path.name} unreadable ({exc})"
    if list(arr.shape) != entry.get("shape") or str(arr.dtype) != entry.get("dtype"):
        return f"{path.name} shape/dtype {arr.shape}/{arr.dtype} differ from meta.json"
    del arr
    return verify_layer_file(path, entry.get("checksum"))
