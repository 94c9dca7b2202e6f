"""Temporaries named after their writer, and the removal of those whose writer is gone.

Every cache of the lab (the reader cache, ``corpora.cache``; the feature cache, ``features``) writes a file
to a temporary beside it and moves it into place. A process killed in between (``kill -9``, out of memory,
a power cut) leaves the temporary behind; so each is named ``<final name>.<host>-<pid>.<random>.tmp``
and :func:`remove_stale_temps` removes those of writers that are gone: same host and a dead PID, or
older than ``STALE_AFTER_S`` (another host, a reused PID, or a name from before writers were recorded).
Temporaries are created with mode 0666 less the umask, like any file (``mkstemp`` would give 0600: on a
lab server where the app runs as another user, nobody else could read what is moved into place).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import time
from pathlib import Path

HOST = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40] or "host"
STALE_AFTER_S = 6 * 3600  # a temporary this old is a leftover whoever wrote it
_TEMP = re.compile(r"\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)\.[^.]+\.tmp$")


def temp_path(final: Path) -> Path:
    """A new empty temporary beside ``final``, named after this writer (host and PID), mode 0666 & ~umask."""
    while True:
        tmp = final.parent / f"{final.name}.{HOST}-{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


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
            pid = int(m["pid"])
            alive = pid_alive(pid)
            stale = pid != os.getpid() and (not alive or age > STALE_AFTER_S)
            writer = f"writer process {pid} " + (f"still runs, file {age / 3600:.0f} h old" if alive else "is gone")
        else:  # another host, or named before writers were recorded
            stale, writer = age > STALE_AFTER_S, f"{age / 3600:.0f} h old"
        if not stale:
            continue
        try:
            size = path.stat().st_size
            path.unlink()
        except OSError as exc:
            log.warning("Cannot remove stale temporary %s: %s", path, exc)
            continue
        removed.append(path)
        log.warning("Removed %s (%.1f MB), left by a write that did not finish (%s).", path, size / 1e6, writer)
    return removed
