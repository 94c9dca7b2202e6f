"""The app's data warm-up (``app_pages.warmup.start_warmup``): a thread that reads WordNet and SemCor while
the first page runs, must not import packages while it does, and keeps what it read out of later garbage
collections.

Python's imports are not safe against two threads importing packages that import each other at the same
time: with the worker importing nltk (which imports scikit-learn) while a first page imported probes (which
imports scikit-learn too), a first visitor could see "This app has encountered an error" (``cannot import
name 'clone' from 'sklearn.base'``, a ``_DeadlockError``; 1 of 40 starts of a harness doing what the server
does). The race is too rare to test as a race; what is tested are the rules that prevent it: every module the
worker needs is imported before it starts, so the worker imports none (an audit hook sees each import and the
thread that makes it), and sessions whose first runs start at once wait for that import. In subprocesses: an
audit hook cannot be removed, and the modules must not already be imported by other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

SCRIPT = """
import gc, json, sys, threading
import streamlit  # the server has imported it before app.py runs
import app_pages.common  # app.py's imports
import app_pages.warmup as warmup

imported_by_worker = []


def hook(event, args):
    if event == "import" and threading.current_thread().name == "embprobe-warmup":
        imported_by_worker.append(args[0])


sys.addaudithook(hook)
warmup.start_warmup()
with warmup._WARM_LOCK:  # released when the worker is done
    pass
print(json.dumps({
    "imported": imported_by_worker,
    "nltk": "nltk" in sys.modules,
    "frozen": gc.get_freeze_count(),
    "walked": len(gc.get_objects()),
    "gc_enabled": gc.isenabled(),
}))
"""


def in_fresh_interpreter(script: str, data_root: Path, *args: str) -> tuple:
    """(the JSON ``script`` prints last, its stderr), run by a new Python on the real data with ``args``."""
    env = {**os.environ, "EMBPROBE_DATA": str(data_root), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.fixture(scope="module")
def warmed_up(data_root: Path) -> dict:
    """What SCRIPT reports after the warm-up of a fresh interpreter has read the real data."""
    report, stderr = in_fresh_interpreter(SCRIPT, data_root)
    assert "warm-up could not read the data" not in stderr  # the worker really read WordNet and SemCor
    return report


def test_the_warmup_thread_imports_nothing_but_codecs(warmed_up: dict) -> None:
    report = warmed_up
    assert report["nltk"]
    # A text codec (a file's encoding, looked up on first use) is a leaf module: it imports nothing back.
    assert [m for m in report["imported"] if not m.startswith("encodings")] == []


def test_the_data_read_by_the_warmup_is_kept_out_of_later_collections(warmed_up: dict) -> None:
    """WordNet's indexes and SemCor (~370k objects) are frozen once read: a later full collection does not walk
    them (0.25 s each on this machine, bench/bench_gc_pause.py), and the collector is on again."""
    report = warmed_up
    assert report["gc_enabled"]
    assert report["frozen"] > 300_000  # the imports, WordNet and SemCor
    assert report["walked"] < report["frozen"] / 10


UNLOADED_MODELS = """
import gc, json, sys, weakref
import torch
from models.registry import load_embedder, unload_embedder

alive = {}
for name in sys.argv[1:]:
    emb = load_embedder(name)
    emb.embed([["The", "bank", "was", "closed", "."]])
    params = [weakref.ref(p) for m in vars(emb).values() if isinstance(m, torch.nn.Module) for p in m.parameters()]
    assert params, name
    gc.disable()
    unload_embedder(name)
    del emb
    alive[name] = sum(r() is not None for r in params)
    gc.enable()
print(json.dumps(alive))
"""


def test_an_unloaded_model_is_freed_without_the_collector(data_root: Path) -> None:
    """A model loaded while the warm-up reads is frozen with everything else; the freeze is safe only if its
    tensors need no collection to be freed once the model is unloaded: no reference cycle may hold them. In a
    fresh interpreter: in the suite's, the app's own model cache (AppTests) holds models too."""
    names = ["minilm", "elmo-small", "gpt-small"]
    alive, _ = in_fresh_interpreter(UNLOADED_MODELS, data_root, *names)
    assert alive == dict.fromkeys(names, 0)


CONCURRENT_FIRST_RUNS = """
import json, sys, threading
import streamlit
import app_pages.common
import app_pages.warmup as warmup

barrier = threading.Barrier(3)
returned_with_nltk = []


def first_run():
    barrier.wait()
    warmup.start_warmup()
    returned_with_nltk.append("nltk" in sys.modules and warmup._WARM_STARTED.is_set())


threads = [threading.Thread(target=first_run) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
warmup.wait_warmup()
print(json.dumps(returned_with_nltk))
"""


def test_sessions_starting_at_once_wait_until_the_warmup_has_imported(data_root: Path) -> None:
    """Three sessions' first runs at once: none goes on to its page (and its imports) before nltk is imported
    and the worker started, so no page imports beside nltk's import either."""
    returned_with_nltk, _ = in_fresh_interpreter(CONCURRENT_FIRST_RUNS, data_root)
    assert returned_with_nltk == [True, True, True]
