"""Corpus search UI shared by the Polysemy explorer and the Embedding space (not a page).

exBERT-style: a query vector (a picked occurrence, a typed token) against every sense-tagged SemCor
occurrence at one layer, read from the feature cache the WSD probe fills. The logic is
:mod:`viz.corpus_search`; this module supplies it the vectors (``features`` on the WSD probe's SemCor
split), caches it per server and draws the hits, their sense and POS histogram and the downloads.

The corpus index (that split embedded once per model, every layer) is built ahead by ``make index`` /
``python -m features index``, or from the panel in the background (issue 30): a child process
``python -m features index --model M --nice APP_BUILD_NICE`` (one per model and server, kept across reruns; the
cache's build lock keeps a command-line build and an app build of one model from running at once).
Meanwhile the panel shows its fraction and time left (``features.background.build_status``, polled by
a fragment every ``POLL_S`` seconds) and the rest of the page stays usable; once the entry is
committed the page reruns and the search appears. A failed build is one message and a "Try again"
button; the uncommitted entry is never read. ``$EMBPROBE_CORPUS_LIMIT=N`` searches only the first N
SemCor sentences (a quicker index; ``python -m features index --limit N`` builds the same one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO

import numpy as np
import streamlit as st

from app_pages import state
from app_pages.common import OCCURRENCE_COLUMNS, chart, code, download, md
from app_pages.loaders import get_embedder, semcor_corpus
from corpora.paths import REPO_ROOT
from features import get_features, has_layers, stored_layers
from features.background import APP_BUILD_NICE, BuildStatus, build_status
from models.registry import load_embedder
from probes.tasks.wsd.sources import WsdSplit, builtin_train
from viz.corpus_search import (
    PieceRows,
    corpus_index,
    corpus_vectors,
    hits_frame,
    nearest,
    rows_vectors,
    same_sense_share,
)
from viz.export import file_stem, frame_csv, frame_json
from viz.occurrence_figures import hit_histograms
from viz.senses import sense_info
from viz.text import shorten

LIMIT_ENV = "EMBPROBE_CORPUS_LIMIT"
POLL_S = 2.0  # how often the progress of a build is read again (a fragment: only it reruns)


def sense_label(key: str | None) -> str:
    if key is None:
        return "(no label)"
    return sense_info(key).label if "%" in key else key


def corpus_limit() -> int | None:
    """``$EMBPROBE_CORPUS_LIMIT`` (the first N SemCor sentences), else None: all of SemCor."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        st.warning(f"{LIMIT_ENV}={md(text)} is not a positive number of sentences; searching all of SemCor.")
        return None
    return int(text)


def corpus_scope(limit: int | None) -> str:
    """What a corpus search over ``limit`` (``corpus_limit``) searches, as the pages say it: all of SemCor, or its
    first N sentences."""
    return "all of SemCor" if limit is None else f"SemCor's first {limit:,} sentences"


@st.cache_resource(show_spinner=False)
def cached_index(limit: int | None = None):
    """SemCor's sense-tagged tokens in the WSD probe's row order (once per server)."""
    sentences, _ = semcor_corpus()
    return corpus_index(sentences if limit is None else sentences[:limit])


@st.cache_resource(show_spinner=False)
def semcor_split(limit: int | None = None) -> WsdSplit:
    """The WSD probe's SemCor training split: piece layout, kept rows, feature-cache key (once per server)."""
    return builtin_train(limit)


def _piece_rows(emb, limit: int | None, layers=None) -> PieceRows:
    """``viz.corpus_search``'s callback: the split's rows at a layer, from the feature cache (the page reads
    them only once ``_is_cached`` says they are built; ``layers``: those read now, default all)."""
    split = semcor_split(limit)
    feats = get_features(emb, split.feature_key, split.layout.sentences, layers, keep=split.keep, show_progress=False)
    return feats.layer


def _is_cached(emb, layers, limit: int | None) -> bool:
    split = semcor_split(limit)  # its sentences too: another data folder's SemCor has the same key
    return has_layers(emb, split.feature_key, layers, sentences=split.layout.sentences, keep=split.keep)


@st.cache_resource(show_spinner=False, max_entries=2)
def _matrix(name: str, fingerprint: str, layer: int, limit: int | None) -> np.ndarray:
    # ~225k × dim float32 unit rows (350 MB for MiniLM): two (model, layer) pairs are kept per server.
    return corpus_vectors(semcor_split(limit).layout, _piece_rows(load_embedder(name), limit, [layer]), layer)


@st.cache_resource(show_spinner=False, max_entries=4)
def _cached_rows(name: str, fingerprint: str, limit: int | None) -> PieceRows:
    return _piece_rows(load_embedder(name), limit)


def cached_occurrence_vectors(model: str, occs) -> np.ndarray | None:
    """(layers, len(occs), dim) vectors of SemCor occurrences read from the WSD probe's feature cache, or
    None (an occurrence not from SemCor, or the cache lacks a layer of ``model``): a new word then costs
    a few row reads instead of embedding its sentences."""
    if not occs or any(o.ref is None for o in occs):
        return None
    emb, limit = get_embedder(model), corpus_limit()
    if not _is_cached(emb, range(emb.num_layers), limit):
        return None
    rows = [cached_index(limit).row_of(*o.ref) for o in occs]
    if any(r is None for r in rows):
        return None
    layout = semcor_split(limit).layout
    return rows_vectors(layout, _cached_rows(model, emb.fingerprint(), limit), emb.num_layers, rows)


# ------------------------------------------------------------------------- background builds (issue 30)


@dataclass
class Child:
    """A ``python -m features index`` started by this server; ``log``: its stderr (a failure before it
    could write its progress file says why there)."""

    proc: subprocess.Popen
    log: IO[bytes]
    started: float


_CHILDREN: dict[tuple[str, str, int | None], Child] = {}  # (model, fingerprint, limit): one build each per server
_CHILDREN_LOCK = threading.Lock()


def start_build(model: str, fingerprint: str, limit: int | None, layer: int) -> None:
    """Start building ``model``'s corpus index in a child process unless this server already runs one: every
    layer where the disk holds them, else at least ``layer`` (the one the page shows)."""
    with _CHILDREN_LOCK:
        child = _CHILDREN.get((model, fingerprint, limit))
        if child is not None and child.proc.poll() is None:
            return
        argv = [sys.executable, "-m", "features", "index", "--model", model, "--layers", str(layer)]
        argv += ["--nice", str(APP_BUILD_NICE), "--quiet"]
        log = tempfile.TemporaryFile()  # noqa: SIM115 - open for the child's whole life
        proc = subprocess.Popen(
            argv + ([] if limit is None else ["--limit", str(limit)]),
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        _CHILDREN[(model, fingerprint, limit)] = Child(proc, log, time.time())


def wait_for_builds(timeout: float | None = None) -> None:
    """Wait for every build this server started (the tests use it; the app itself never waits on a build)."""
    with _CHILDREN_LOCK:
        children = list(_CHILDREN.values())
    for child in children:
        child.proc.wait(timeout)


def _tail(log: IO[bytes], n: int = 600) -> str:
    log.seek(0)
    lines = [ln for ln in log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    return " ".join(lines[-2:])[-n:] or "no message"


def index_state(model: str, fingerprint: str, key: str, limit: int | None) -> BuildStatus | None:
    """How ``model``'s index build stands: the cache's progress file (any builder: this server's child, a
    terminal), else this server's child starting or ended without a word; None: no build."""
    status = build_status(fingerprint, key)
    child = _CHILDREN.get((model, fingerprint, limit))
    if child is None or (status is not None and (status.running or (status.started or 0) >= child.started)):
        return status
    code = child.proc.poll()
    if code is None:  # not yet at work (an earlier failure's file may still be there)
        return BuildStatus("running", message="starting: loading the model and SemCor", started=child.started)
    if status is not None:
        return status
    if code != 0:
        return BuildStatus("failed", error=f"the build process ended with status {code}: {_tail(child.log)}")
    return None  # it ended well: built (or the cache could not store it: ``has_layers`` tells)


@state.fragment(run_every=POLL_S)
def build_progress(model: str, fingerprint: str, key: str, limit: int | None, layer: int) -> None:
    """The running build's fraction and time left, read again every ``POLL_S`` seconds (only this reruns);
    when it ends (built, or failed) the whole page reruns and shows the search or the error."""
    status = index_state(model, fingerprint, key, limit)
    if status is None or not status.running or has_layers(fingerprint, key, [layer]):
        st.rerun()
    child = _CHILDREN.get((model, fingerprint, limit))
    ours = child is not None and (status.pid is None or status.pid == child.proc.pid)
    who = "" if ours else f" by another process (pid {status.pid}: {md(status.by or 'unknown')})"
    st.progress(min(1.0, max(0.0, status.fraction)), text=f"Building the corpus index of {md(model)}: {status.text()}")
    st.caption(
        f"Built in the background{who}: the rest of the page works meanwhile, and the search appears here "
        "when the index is ready (it is kept in the feature cache: built once per model)."
    )


def index_missing(model: str, fingerprint: str, key: str, limit: int | None, layer: int, widget_key: str) -> None:
    """What the panel shows while ``model`` has no index: its build's progress, its failure, or the offer."""
    status = index_state(model, fingerprint, key, limit)
    if status is None or not status.running:
        # layers a short disk kept (the page's own layer among them would be a broken file: rebuilt)
        stored = [j for j in stored_layers(fingerprint, key) if j != layer] if status is None else []
        box = st.empty()  # the offer goes as soon as it is taken: the progress replaces it in this run
        with box.container():
            if status is not None:
                st.error(
                    f"Building the corpus index of **{md(model)}** did not finish: {md(status.text())}. Nothing "
                    "partial is used; try again, or run "
                    + code(f"python -m features index --model {model}")
                    + " in a terminal."
                )
            elif stored:
                held = ", ".join(map(str, stored))
                st.info(
                    f"The corpus index of **{md(model)}** holds layer{'s' * (len(stored) > 1)} {held} only (the "
                    f"disk could not hold every layer when it was built). Layer {layer} needs SemCor embedded "
                    "again (minutes on a CPU, in the background); it is added to the index if the disk has room. "
                    f"Or free some space and run {code('python -m features index --model ' + model)}."
                )
            else:
                st.info(
                    f"The corpus index of **{md(model)}** is not built yet: it embeds every sense-tagged SemCor "
                    "sentence once (the features the WSD probe uses; minutes on a CPU, in the background, while "
                    "the page stays usable; every layer, or only this one where the disk is short), then every "
                    "search is instant. Or build it ahead: `make index` or "
                    + code(f"python -m features index --model {model}")
                    + "."
                )
            label = (
                "Try again"
                if status is not None
                else f"Build layer {layer} of the SemCor index for {model}"
                if stored
                else f"Build the SemCor index for {model}"
            )
            clicked = st.button(label, key=f"{widget_key}_build")
        if not clicked:
            return
        box.empty()
        start_build(model, fingerprint, limit, layer)
    build_progress(model, fingerprint, key, limit, layer)


def corpus_panel(
    model: str,
    layer: int,
    query: np.ndarray,
    *,
    key: str,
    k_param: str | None = None,
    ref: tuple[int, int] | None = None,
    query_key: str | None = None,
    what: str = "",
) -> None:
    """Nearest SemCor occurrences of ``query`` (a vector at ``layer`` of ``model``); ``ref`` excludes the
    query's own SemCor token, ``query_key`` (its WordNet sense) marks hits of the same sense. The number of
    neighbours is in the URL as ``k_param`` (default: ``key + "_k"``)."""
    if not np.abs(query).any():  # a static model's unknown word: no direction to compare (``nearest`` refuses it)
        st.info(f"{md(what or 'This occurrence')} has no vector in {md(model)} (all zeros): nothing to search for.")
        return
    emb, limit = get_embedder(model), corpus_limit()
    if not _is_cached(emb, [layer], limit):
        index_missing(model, emb.fingerprint(), semcor_split(limit).feature_key, limit, int(layer), key)
        return
    with st.spinner("Reading SemCor's vectors at this layer (once per model and layer)…"):
        index = cached_index(limit)
        Xn = _matrix(model, emb.fingerprint(), int(layer), limit)
    if len(index) != Xn.shape[0]:
        raise ValueError(
            f"The corpus index has {len(index)} rows but the cached vectors {Xn.shape[0]}; rebuild the feature cache."
        )
    k_key = state.bind(f"{key}_k", 20, lo=5, hi=50, step=5, param=k_param or f"{key}_k")
    k = st.slider("Corpus neighbours", 5, 50, step=5, key=k_key)
    exclude = index.row_of(*ref) if ref is not None else None
    hits = nearest(Xn, query, k, exclude=exclude)
    sentences, _ = semcor_corpus()
    df = hits_frame(hits, index, sentences, sense_label, query_key=query_key)
    share = same_sense_share(hits, index, query_key) if query_key else None
    st.caption(
        f"The {len(hits)} nearest of {len(index):,} sense-tagged occurrences in {corpus_scope(limit)} (cosine, full "
        f"{Xn.shape[1]} dimensions, {md(model)} layer {layer}){' to ' + md(what) if what else ''}"
        + (f"; **{share:.0%}** have the query's sense ({md(sense_label(query_key))})." if share is not None else ".")
    )
    name = file_stem("corpus", model, f"layer{layer}", what)
    to = f" to {shorten(what, 40)}" if what else ""
    chart(
        hit_histograms(
            df, title=f"{len(hits)} nearest SemCor occurrences{to}", subtitle=f"{model} layer {layer}", height=360
        ),
        name + "-histogram",
        key=f"{key}_hist",
        data=lambda: frame_csv(df),
        data_label="Hits (CSV)",
        data_name=name + "-hits",  # every hit, not the histogram's counts
    )
    st.dataframe(df.drop(columns="sentence"), hide_index=True, width="stretch", column_config=OCCURRENCE_COLUMNS)
    download("Hits (JSON)", lambda: frame_json(df), f"{name}.json", key=f"{key}_json", mime="application/json")
