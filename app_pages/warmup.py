"""The app's data warm-up: WordNet and SemCor read in a background thread while the first page runs.

WordNet (NLTK builds its indexes: ~20-30 s on a busy 2-core CPU) and SemCor (~10 s from the parse cache) are
read once per server process. ``app.py`` starts the thread on its first run, so the first visitor to the
Polysemy or Probes page waits less; a page that needs the data calls :func:`wait_warmup` first, so it is never
read twice at once. Two rules keep the thread harmless (tests/test_app_warmup.py): it imports nothing (every
import happens before it starts), and what it read is kept out of later garbage collections.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

import streamlit as st

from corpora.paths import nltk_module
from corpora.semcor import load_semcor
from corpora.wordnet import wordnet

log = logging.getLogger("embprobe.app")

_START_LOCK = threading.Lock()  # held while the warm-up starts: another session's first run waits for it
_WARM_LOCK = threading.Lock()  # held while the data is read: wait_warmup() waits for it
_WARM_STARTED = threading.Event()


def start_warmup() -> None:
    """Start reading WordNet and SemCor in a background thread (once per process)."""
    with _START_LOCK:
        if _WARM_STARTED.is_set():
            return
        # NLTK is imported here, in a script's thread, not in the worker: Python's imports are not safe
        # against two threads importing packages that import each other at the same time. A first page
        # importing probes (-> scikit-learn) while the worker imported nltk (-> scikit-learn) failed with
        # "cannot import name 'clone' from 'sklearn.base'" (_DeadlockError) in 1 of 40 starts of a harness
        # that does what the server does (docs/reliability.md). Another session's first run waits on the
        # lock meanwhile, so its page does not import beside it either; the worker then only reads files.
        nltk_module()
        _WARM_LOCK.acquire()  # released by the worker
        _WARM_STARTED.set()  # after the lock is held: wait_warmup() never passes before the read
        threading.Thread(target=_read_data, name="embprobe-warmup", daemon=True).start()


def _read_data() -> None:
    """The worker: WordNet and SemCor read, then frozen out of later garbage collections."""
    # WordNet's indexes and parsed SemCor are ~370k objects that live as long as the server and make no
    # garbage. While they are read, the collector would walk the growing heap again and again (a first
    # visit's full collections: 1.2 s, 0.54 s without these); afterwards each full collection would walk
    # them again (0.25 s). So collection waits while they are read, and then they are frozen: gc.freeze()
    # keeps every object alive now out of later collections (bench/bench_gc_pause.py, docs/benchmarks.md).
    # A model a page loads meanwhile is frozen too: unloaded, its tensors are still freed, by reference
    # counting (no cycle holds them; tests/test_app_warmup.py).
    gc.disable()
    try:
        t0 = time.perf_counter()
        wordnet()
        load_semcor()
        log.info("warm-up: WordNet and SemCor read in %.1f s", time.perf_counter() - t0)
    except Exception:  # missing data is reported by the page that needs it
        log.warning("warm-up could not read the data", exc_info=True)
    finally:
        gc.freeze()
        gc.enable()
        _WARM_LOCK.release()


def wait_warmup() -> None:
    """Block until the warm-up (if started) has finished, so data is never read twice at once."""
    if _WARM_STARTED.is_set():
        with st.spinner("Reading WordNet and SemCor (once per server)…"), _WARM_LOCK:
            pass
