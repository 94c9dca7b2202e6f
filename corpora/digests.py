"""Content digests of files, computed once: SHA-256 of the bytes, remembered by the file's state.

Model weights (hundreds of MB to GB) and data files are keyed by what they contain, not where they
are: a retrained checkpoint at the same path gets a new digest, a moved or copied one keeps it. Hashing
a big file takes seconds, so each digest is remembered in ``cache_dir()/file-digests.json`` under the
file's resolved path and its state (size, mtime, inode, ctime); a file whose state changed is hashed again.
The inode and the status-change time are there because size and mtime alone can be forged by accident:
a same-size edit followed by ``touch -r`` (or a copy tool that restores mtimes) keeps both, but every
write and every ``utime`` moves ctime, which no user call can set back; a replaced file has a new inode.

The memo is only a speed-up: a corrupt or unreadable memo is ignored (and rewritten), a read-only
cache directory means hashing every time. Writes are atomic (temp file + rename) under a file lock,
so two processes never leave a half-written memo.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from filelock import FileLock, Timeout

from corpora.paths import cache_dir
from corpora.temps import write_atomically

MEMO_FILE = "file-digests.json"
_CHUNK = 8 * 2**20


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _memo_path() -> Path | None:
    try:
        return cache_dir() / MEMO_FILE
    except OSError:  # cache directory cannot be created (read-only filesystem)
        return None


def _read_memo(memo: Path) -> dict[str, list]:
    try:
        data = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_memo(memo: Path, updates: dict[str, list]) -> None:
    try:
        with FileLock(str(memo) + ".lock", timeout=10):
            data = _read_memo(memo)
            data.update(updates)
            write_atomically(memo, json.dumps(data))  # no temporary left on a full disk; the umask's mode
    except (OSError, Timeout):
        pass  # a read-only, full or busy cache: the digests are recomputed next time


def file_digests(paths: Iterable[str | Path]) -> dict[Path, str]:
    """SHA-256 hex digest of each file's bytes (hashed once per file state, see module doc)."""
    files = [Path(p) for p in paths]
    memo = _memo_path()
    known = _read_memo(memo) if memo is not None else {}
    out: dict[Path, str] = {}
    updates: dict[str, list] = {}
    for f in files:
        st = f.stat()  # FileNotFoundError for a missing file: the caller names what it expected
        key = str(f.resolve())
        state = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
        entry = known.get(key)
        if isinstance(entry, list) and len(entry) == len(state) + 1 and entry[:-1] == state:
            out[f] = str(entry[-1])
            continue
        out[f] = _hash_file(f)
        updates[key] = [*state, out[f]]
    if updates and memo is not None:
        _write_memo(memo, updates)
    return out


def file_digest(path: str | Path) -> str:
    return file_digests([path])[Path(path)]


def content_fingerprint(files: Iterable[str | Path], extra: str = "", root: str | Path | None = None) -> str:
    """One short digest of several files' contents and names, plus ``extra`` (options, revision).

    Names are taken relative to ``root`` (default: each file's own name), never as absolute paths,
    so the same checkpoint in another folder or on another machine has the same fingerprint.
    """
    files = sorted({Path(f) for f in files})
    digests = file_digests(files)
    h = hashlib.sha256()
    for f in files:
        name = f.relative_to(root).as_posix() if root is not None else f.name
        h.update(f"{name}\0{digests[f]}\n".encode("utf-8", "surrogatepass"))
    h.update(extra.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


#: Files in a model's (or data) folder that no loader reads (notes, logs, a version control's files): adding one (a
#: README) changes no vector, so it must not change a model's content key (a sweep's tasks) nor reload it.
NOT_READ = ("README*", "*.md", "LICENSE*", "*.log", ".*")


def content_files(location: Path) -> list[Path]:
    """The files under ``location`` (itself when a file) a loader may read: ``NOT_READ``, hidden folders and
    ``__pycache__`` left out. Linked folders are followed, as the loaders follow them (a data folder made of links
    to the real ones is read through them; ``rglob`` did not enter them, so two such folders had one key), each
    real folder once (a link loop ends), under its real name where the walk meets it before a link to it."""
    if location.is_file():
        return [location]
    found, seen = [], set()
    for folder, subfolders, files in os.walk(location, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            subfolders[:] = []
            continue
        seen.add(real)
        # in a fixed order, real folders before links: a folder reachable under two names is named the same way on
        # every file system (the first visit wins), by its real name where it has one here
        subfolders[:] = sorted(
            (d for d in subfolders if not d.startswith(".") and d != "__pycache__"),
            key=lambda d: (os.path.islink(os.path.join(folder, d)), d),
        )
        for name in files:
            p = Path(folder, name)
            if not name.startswith(".") and p.is_file() and not any(p.match(pattern) for pattern in NOT_READ):
                found.append(p)
    return sorted(found)
