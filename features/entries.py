"""The feature cache's entries seen from outside: the layers already built, and whole entries copied
between caches. Callers name an entry (model, dataset key), never its files.

    has_layers(embedder, "semcor-tagged", [0, 6])     # built and valid? nothing is extracted
    stored_layers(embedder, "semcor-tagged")          # [6]: the layers it holds (a quick look)
    open_layer(embedder, "semcor-tagged", 6)          # (num_rows, dim) read-only memmap, verified
    names = entry_files(directory, read_meta(directory))   # layer files to copy, each checked first
    install_entry(fingerprint, key, meta, fetch)      # a copied entry into the local cache

Design notes:

- **Files, and their inputs where given.** ``has_layers`` and ``open_layer`` check what ``get_features`` checks
  of a file (format version, fingerprint, size, header, shape, checksum, finiteness: ``store.check_layer``,
  the checksum once per file state and process). Which sentences it was computed from only
  ``has_layers(…, sentences=, keep=)`` checks: the key names the data, but another data folder (an edited
  SemCor) gives the same key, and a "built" that ``get_features`` then rebuilds would be a long wait promised
  away (``features index``, the estimate).
- **Copies keep the cache's guarantees.** ``install_entry`` holds the entry's lock, fetches every layer
  to a temporary, refuses one whose size or checksum differs from the copied ``meta.json`` (nothing
  is installed), then moves the layers into place with the local ``meta.json`` removed first and
  written last: an interrupted install reads as absent. The bytes are those of the source entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from corpora.paths import cache_dir
from corpora.temps import write_atomically
from features.checks import FeatureCacheError, entry_lock, file_checksum, temp_path
from features.store import (
    META_FILE,
    check_layer,
    entry_rel,
    feature_dir,
    foreign,
    keep_hash,
    layer_file,
    meta_text,
    read_meta,
    sentences_hash,
    stored,
)

#: ``fetch(name, path)``: copy the source entry's file ``name`` to the local file ``path``.
Fetch = Callable[[str, Path], None]


def _fingerprint(embedder_or_fingerprint) -> str:
    if isinstance(embedder_or_fingerprint, str):
        return embedder_or_fingerprint
    return embedder_or_fingerprint.fingerprint()


def _problems(
    embedder_or_fingerprint, key: str, layers: Iterable[int], root: Path | None, inputs: dict | None = None
) -> tuple[Path, dict]:
    """(the entry's directory, {layer: why it cannot be read} for the layers that cannot); ``inputs``: the fields
    of ``meta.json`` that say what the entry was built from, as they must read (``has_layers``)."""
    fingerprint = _fingerprint(embedder_or_fingerprint)
    computed_with = getattr(embedder_or_fingerprint, "computed_with", None)
    directory = feature_dir(fingerprint, key, root)
    meta = read_meta(directory)
    if meta is not None and (why := foreign(meta, fingerprint, computed_with)):
        return directory, {int(j): why for j in layers}
    if meta is not None and inputs is not None and any(meta.get(k) != v for k, v in inputs.items()):
        return directory, {int(j): f"{META_FILE} written for other sentences" for j in layers}
    found = {int(j): check_layer(directory, meta, int(j)) for j in layers}
    return directory, {j: why for j, why in found.items() if why is not None}


ANY_KEEP = object()  # has_layers: the entry's kept words not compared (a caller that does not know them)


def has_layers(
    embedder_or_fingerprint,
    key: str,
    layers: Iterable[int],
    root: Path | None = None,
    *,
    sentences: Sequence[Sequence[str]] | None = None,
    keep: np.ndarray | None | object = ANY_KEEP,
) -> bool:
    """Whether the cache holds the entry (model, ``key``) with every layer in ``layers`` built and valid, and, with
    ``sentences``, built from those, with ``keep`` (the kept word indices; None: every word) from those words
    (module notes): what ``get_features`` would otherwise rebuild.

    ``embedder_or_fingerprint``: an embedder (its ``fingerprint()``) or the fingerprint itself.
    """
    inputs = None
    if sentences is not None:
        inputs = {"sentences_hash": sentences_hash(sentences), "num_words": sum(len(s) for s in sentences)}
        if keep is not ANY_KEEP:
            inputs["keep_hash"] = keep_hash(keep)
    return not _problems(embedder_or_fingerprint, key, layers, root, inputs)[1]


def stored_layers(embedder_or_fingerprint, key: str, root: Path | None = None) -> list[int]:
    """The layers the entry (model, ``key``) lists with files of the listed size: a quick look (no checksum;
    ``has_layers`` verifies), e.g. to say which layers a disk too small for all of them kept."""
    fingerprint = _fingerprint(embedder_or_fingerprint)
    directory = feature_dir(fingerprint, key, root)
    meta = read_meta(directory)
    if meta is None or foreign(meta, fingerprint):
        return []
    listed = meta.get("layers")
    if not isinstance(listed, dict):
        return []
    return sorted(int(j) for j in listed if str(j).isdigit() and stored(directory, meta, int(j)))


def open_layer(embedder_or_fingerprint, key: str, layer: int, root: Path | None = None) -> np.ndarray:
    """Layer ``layer`` of the entry (model, ``key``): (num_rows, dim), memory-mapped read-only, verified.

    Raises FeatureCacheError saying why when it is not built or fails its checks (``get_features``
    builds it).
    """
    directory, problems = _problems(embedder_or_fingerprint, key, [layer], root)
    if problems:
        raise FeatureCacheError(
            f"{directory}: layer {int(layer)} is not in the feature cache "
            f"({problems[int(layer)]}); extract it first (get_features, or the probe that "
            f"reads '{key}')."
        )
    return np.load(directory / layer_file(layer), mmap_mode="r")


def entry_files(directory: Path, meta: dict) -> list[str]:
    """The layer files of the committed entry ``directory`` whose ``meta.json`` reads ``meta``, in layer
    order, each checked first: what a copy of the entry copies before ``META_FILE`` (``meta_text(meta)``).

    Raises FeatureCacheError naming the first layer that fails its checks.
    """
    layers = sorted(int(j) for j in meta.get("layers", {}))
    for j in layers:
        why = check_layer(directory, meta, j)
        if why is not None:
            raise FeatureCacheError(f"{directory}: layer {j} cannot be copied ({why}).")
    return [layer_file(j) for j in layers]


def install_entry(
    fingerprint: str, key: str, meta: dict, fetch: Fetch, root: Path | None = None, source: str = ""
) -> Path:
    """Install an entry copied from elsewhere (``meta``: its ``meta.json``; ``fetch``: copies its files)
    into the local cache ``root``; returns the entry's directory. A local entry with the same ``meta``
    whose layers pass their checks is kept as it is (nothing fetched).

    Raises FeatureCacheError, naming ``source``, when a fetched layer's size or checksum differs from ``meta``.
    """
    directory = feature_dir(fingerprint, key, root)
    directory.mkdir(parents=True, exist_ok=True)
    layers = sorted(int(j) for j in meta.get("layers", {}))
    with entry_lock(directory):
        local = read_meta(directory)
        if local == meta and all(check_layer(directory, local, j) is None for j in layers):
            return directory
        tmps: dict[int, Path] = {}
        try:
            for j in layers:
                tmps[j] = temp_path(directory / layer_file(j))
                fetch(layer_file(j), tmps[j])
                want = meta["layers"][str(j)]
                sums = want.get("checksum")
                if tmps[j].stat().st_size != want.get("nbytes") or file_checksum(tmps[j], like=sums) != sums:
                    raise FeatureCacheError(
                        f"{source or directory}/{layer_file(j)} does not match its {META_FILE} "
                        "(size or checksum): not installed; re-publish the entry."
                    )
            # The local meta.json goes first, so an interrupted install reads as absent and is rebuilt.
            (directory / META_FILE).unlink(missing_ok=True)
            for j in layers:
                os.replace(tmps.pop(j), directory / layer_file(j))
            write_atomically(directory / META_FILE, meta_text(meta))
        finally:
            for tmp in tmps.values():
                tmp.unlink(missing_ok=True)
    return directory


def local_entries(fingerprint: str, root: Path | None = None) -> list[Path]:
    """The committed entries of one model in the local cache (directories with a ``meta.json``)."""
    base = (root or cache_dir()) / entry_rel(fingerprint)
    return sorted(p for p in base.iterdir() if (p / META_FILE).is_file()) if base.is_dir() else []
