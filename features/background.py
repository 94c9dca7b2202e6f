"""Building a feature-cache entry ahead of its use: one builder at a time, its progress on disk for others.

A long extraction (the app's corpus index: SemCor's 37k sentences under a model, minutes) is built by
``python -m features index`` or by the app in a child process, and a page reads how far it is without
waiting for it (issue 30):

    build_entry(embedder, "semcor-tagged", sentences, keep=keep, by="python -m features index")
    status = build_status(embedder.fingerprint(), "semcor-tagged")   # None, or running / failed
    status.text()   # '42% of the words · about 3 min left · minilm, semcor-tagged: 15,000/37,176 sentences, …'

Design notes:

- **The build lock** ``<entry>/.build.lock`` (``filelock``: released by the OS when its holder dies)
  says that a build is under way; a second builder waits for it (the command line) or gets
  ``BuildBusy`` (the app, which then shows the first one's progress). It is not the entry lock ``.lock``
  that ``get_features`` holds while it writes: a page probing that one would wait for the whole build.
- **The progress file** ``<entry>/.build.json``: state ("running" / "failed"), fraction, estimated time
  left, the latest message, who builds (pid, host, ``by``), written atomically at most once a
  second; removed once the entry is committed. "running" with the lock free means the builder died
  (killed, out of memory): read as failed. A failure writes "failed" and the error's message.
- **Nothing partial is read**: ``get_features`` commits an entry by writing ``meta.json`` last, so after
  a crash ``has_layers`` is False and the next build starts over.
- **Time left** = elapsed × (1 − f) / f since the extraction began (f: the words embedded), once
  ``MIN_FRACTION`` is done; sentences go longest first, so the first estimates are on the long side.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from corpora.temps import write_atomically
from features.build import ProgressFn
from features.checks import FeatureCacheError
from features.extract import Features, get_features
from features.store import feature_dir

BUILD_LOCK = ".build.lock"
BUILD_FILE = ".build.json"
MIN_FRACTION = 0.01  # of the words embedded before a time left is said
WRITE_EVERY_S = 1.0
CLAIM_WAIT_S = 2.0  # rides over a reader's brief probe of the lock (``build_status``)


class BuildBusy(FeatureCacheError):
    """Another process or thread is building this entry."""

    def __init__(self, message: str, status: BuildStatus | None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class BuildStatus:
    """A build seen from outside. state: "running" or "failed"; eta_s: None until it can be estimated."""

    state: str
    fraction: float = 0.0
    eta_s: float | None = None
    message: str = ""
    error: str | None = None
    pid: int | None = None
    host: str = ""
    by: str = ""
    started: float | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    def text(self) -> str:
        """'42% of the words · about 3 min left · <message>' (running) or the error (failed)."""
        if not self.running:
            return self.error or "the build stopped"
        left = f"about {duration(self.eta_s)} left" if self.eta_s is not None else "estimating the time left"
        # words, not sentences: the longest sentences go first, so the sentence count in the message lags behind
        return " · ".join(p for p in (f"{self.fraction:.0%} of the words", left, self.message) if p)


#: How much the app lowers a background build's priority (``features index --nice``): the pages come first.
APP_BUILD_NICE = 10


def duration(seconds: float | None) -> str:
    """'45 s', '4 min', '1 h 05 min' (at least '1 s': what is said is a time, never '0 s'); every time the lab
    says in words (an estimate, a build, a page's first fit) is written by this."""
    if seconds is None:
        return "?"
    s = max(1, round(seconds))
    if s < 90:
        return f"{s} s"
    minutes = round(s / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def time_left(elapsed_s: float, fraction: float) -> float | None:
    """Seconds left at ``fraction`` done after ``elapsed_s`` (None: too early to say)."""
    if fraction < MIN_FRACTION or elapsed_s <= 0:
        return None
    return elapsed_s * (1.0 - min(fraction, 1.0)) / fraction


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _lock_free(directory: Path) -> bool:
    """Whether nobody holds the build lock (probed by taking it for an instant; an unusable lock: free)."""
    lock = FileLock(str(directory / BUILD_LOCK))
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return False
    except OSError:
        return True
    lock.release()
    return True


def _status(data: dict) -> BuildStatus:
    def num(name: str) -> float | None:
        value = data.get(name)
        return float(value) if isinstance(value, (int, float)) else None

    return BuildStatus(
        state=str(data.get("state", "failed")),
        fraction=num("fraction") or 0.0,
        eta_s=num("eta_s"),
        message=str(data.get("message", "")),
        error=data.get("error"),
        pid=data.get("pid"),
        host=str(data.get("host", "")),
        by=str(data.get("by", "")),
        started=num("started"),
    )


def build_status(fingerprint: str, key: str, root: Path | None = None) -> BuildStatus | None:
    """How the build of entry (``fingerprint``, ``key``) stands: None (no build running and none failed),
    running (fraction, time left) or failed (why). Reads a small file and probes a lock: instant."""
    directory = feature_dir(fingerprint, key, root)
    if not directory.is_dir():
        return None
    data = _read(directory / BUILD_FILE)
    if _lock_free(directory):
        data = _read(directory / BUILD_FILE)  # read again: the builder may have just finished
        if data is None:
            return None
        if data.get("state") == "running":
            return BuildStatus(
                "failed",
                error="the build stopped before it finished (its process was killed or ran out of memory?); "
                "nothing partial is used",
                pid=data.get("pid"),
                host=str(data.get("host", "")),
                by=str(data.get("by", "")),
                started=data.get("started"),
            )
        return _status(data)
    # A builder holds the lock but has not written its file yet (it is starting).
    return _status(data) if data is not None else BuildStatus("running", message="starting")


class _Reporter:
    """The progress callback of one build: writes ``.build.json`` (throttled) and passes progress on."""

    def __init__(self, path: Path, by: str, then: ProgressFn | None) -> None:
        self.path, self.then = path, then
        self.base = {"pid": os.getpid(), "host": socket.gethostname(), "by": by, "started": time.time()}
        self.t_extract: float | None = None  # when the extraction began (its first callback)
        self.last = 0.0

    def write(self, **fields) -> None:
        with contextlib.suppress(OSError):  # progress is a courtesy: a full disk must not stop the build
            write_atomically(self.path, json.dumps({**self.base, **fields, "updated": time.time()}))

    def __call__(self, fraction: float, message: str) -> None:
        now = time.time()
        if self.t_extract is None:
            self.t_extract = now
        if now - self.last >= WRITE_EVERY_S or fraction >= 1.0:
            self.last = now
            eta = time_left(now - self.t_extract, fraction)
            self.write(state="running", fraction=float(fraction), eta_s=eta, message=message)
        if self.then is not None:
            self.then(fraction, message)


def build_entry(
    embedder,
    key: str,
    sentences: Sequence[Sequence[str]],
    *,
    keep: np.ndarray | None = None,
    layers: Sequence[int] | None = None,
    by: str = "",
    wait: bool = True,
    on_busy: Callable[[BuildStatus | None], None] | None = None,
    progress: ProgressFn | None = None,
    show_progress: bool = False,
    root: Path | None = None,
) -> Features:
    """``get_features`` of one entry, as its only builder, with its progress on disk: every layer where the
    disk holds them, else only ``layers`` (default every layer: then too little disk is an error).

    Another builder at work: ``on_busy(its status)``, then wait for it and reuse what it wrote
    (``wait``), else raise ``BuildBusy``. A failure is recorded for ``build_status`` and re-raised.
    """
    fingerprint = embedder.fingerprint()
    directory = feature_dir(fingerprint, key, root)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FeatureCacheError(f"Cannot create the feature cache entry {directory}: {exc}") from exc
    lock = FileLock(str(directory / BUILD_LOCK))
    try:
        lock.acquire(timeout=CLAIM_WAIT_S)
    except Timeout:
        status = build_status(fingerprint, key, root)
        if on_busy is not None:
            on_busy(status)
        if not wait:
            who = f" by {status.by or 'another process'} (pid {status.pid})" if status and status.pid else ""
            raise BuildBusy(f"{embedder.name}/{key} is already being built{who}.", status) from None
        lock.acquire()
    try:
        report = _Reporter(directory / BUILD_FILE, by, progress)
        report.write(state="running", fraction=0.0, eta_s=None, message="starting")
        try:
            feats = get_features(
                embedder, key, sentences, layers, keep=keep, progress=report, show_progress=show_progress, root=root
            )
        except BaseException as exc:  # recorded for the page, then raised as it was
            if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or a SIGTERM (corpora.errors.run_command): no failure
                why = "the build was stopped (Ctrl-C or a signal) before it finished"
            else:
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            report.write(state="failed", error=why)
            raise
        with contextlib.suppress(OSError):
            (directory / BUILD_FILE).unlink(missing_ok=True)
        return feats
    finally:
        lock.release()
