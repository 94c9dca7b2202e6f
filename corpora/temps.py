"""Temporaries named after their writer, and the removal of those whose writer is gone.

Every cache of the lab (the reader cache, ``corpora.cache``; the feature cache, ``features``) writes a file
to a temporary beside it and moves it into place. A process killed in between (``kill -9``, out of memory,
a power cut) leaves the temporary behind; so each is named ``<final name>.<host>-<pid>-<start>.<random>.tmp``
(``start``: when the writer process started, from ``/proc``; 0 where unknown) and :func:`remove_stale_temps` removes
those of writers that are gone: same host and a dead PID, or a live PID that started at another time (the PID reused);
a live writer's temporaries are kept however old they look (a clock set back, a long write). A temporary whose
writer cannot be told (another host, no start time, a name from before writers were recorded) goes once it is older
than ``STALE_AFTER_S``.
Temporaries are created with mode 0666 less the umask, like any file (``mkstemp`` would give 0600: on a
lab server where the app runs as another user, nobody else could read what is moved into place).

A model folder a trainer writes is one such temporary, a folder moved into place whole
(``models.assets.writing_folder``).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import secrets
import shutil
import socket
import time
from pathlib import Path

HOST = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40] or "host"
STALE_AFTER_S = 6 * 3600  # a temporary this old is a leftover whoever wrote it
_TEMP = re.compile(r"\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)(?:-(?P<start>\d+))?\.[^.]+\.tmp$")


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/PID/stat``'s 22nd field), None where unknown:
    with its PID it names one process, whichever process later gets that PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])  # after "pid (comm)", which may hold spaces
    except (OSError, ValueError, IndexError):
        return None


def writer_id() -> str:
    """This process as a temporary's name says it: host, PID and start (read once per process: a fork has its own)."""
    return _writer_id(os.getpid())


@functools.cache
def _writer_id(pid: int) -> str:
    return f"{HOST}-{pid}-{process_start(pid) or 0}"


def temp_name(final: Path, kind: str = "") -> Path:
    """A fresh name beside ``final`` for this writer's temporary (file or folder): ``NAME.<host>-<pid>-<start>.
    <kind><random>.tmp``, the form ``remove_stale_temps`` reads its writer from."""
    return final.parent / f"{final.name}.{writer_id()}.{kind}{secrets.token_hex(4)}.tmp"


def temp_path(final: Path) -> Path:
    """A new empty temporary beside ``final``, named after this writer (host, PID and start), mode 0666 & ~umask."""
    while True:
        tmp = temp_name(final)
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def write_atomically(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """``data`` (text as UTF-8, or bytes) into ``path`` whole or not at all: into this writer's temporary beside it
    (``temp_path``: the umask's mode, or ``mode``), flushed, then moved into place. A full disk or a kill leaves the
    old file as it was, and no part of the new one."""
    tmp = temp_path(Path(path))
    try:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, under another user
        return True
    return True


def remove_stale_temps(directory: Path, log: logging.Logger, pattern: str = "*.tmp") -> list[Path]:
    """Remove the temporaries (``pattern``, e.g. ``*/*/*.tmp`` for every entry below) of writers that are
    gone, each logged with its size on ``log``. Returns those removed."""
    removed, now = [], time.time()
    for path in directory.glob(pattern):
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue
        m = _TEMP.search(path.name)
        if m and m["host"] == HOST:
            pid, started = int(m["pid"]), int(m["start"] or 0)
            alive = pid_alive(pid)
            now_started = process_start(pid) if alive and started else None
            if not alive:
                stale, writer = True, f"writer process {pid} is gone"
            elif now_started is not None:  # the writer is known: its PID alone says nothing once reused
                stale, writer = now_started != started, f"process {pid} is another than its writer"
            else:
                stale = pid != os.getpid() and age > STALE_AFTER_S
                writer = f"writer process {pid} still runs, file {age / 3600:.0f} h old"
        else:  # another host, or named before writers were recorded
            stale, writer = age > STALE_AFTER_S, f"{age / 3600:.0f} h old"
        if not stale:
            continue
        try:
            if path.is_dir():  # a model folder's (``writing_folder``)
                size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
                shutil.rmtree(path)
            else:
                size = path.stat().st_size
                path.unlink()
        except OSError as exc:
            log.warning("Cannot remove stale temporary %s: %s", path, exc)
            continue
        removed.append(path)
        log.warning("Removed %s (%.1f MB), left by a write that did not finish (%s).", path, size / 1e6, writer)
    return removed


def umask() -> int:
    """This process's umask, read without setting it (``os.umask`` sets it, for every thread)."""
    try:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("Umask:"))
        return int(line.split()[1], 8)
    except (OSError, StopIteration, ValueError):
        return 0o022
