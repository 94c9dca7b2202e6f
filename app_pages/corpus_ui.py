"""Corpus search UI shared by the Polysemy explorer and the Embedding space (not a page).

exBERT-style: a query vector (a picked occurrence, a typed token) against every sense-tagged SemCor
occurrence at one layer, read from the feature cache the WSD probe fills. The logic is
:mod:`viz.corpus_search`; this module supplies it the vectors (``features`` on the WSD probe's SemCor
split), caches it per server and draws the hits, their sense and POS histogram and the downloads.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages.common import _cached_embedder, chart, download, get_embedder, md, semcor_corpus
from features import get_features, has_layers
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
from viz.export import file_stem, frame_json
from viz.occurrence_figures import hit_histograms
from viz.senses import sense_info


def sense_label(key: str | None) -> str:
    if key is None:
        return "(no label)"
    return sense_info(key).label if "%" in key else key


@st.cache_resource(show_spinner=False)
def cached_index():
    """SemCor's sense-tagged tokens in the WSD probe's row order (once per server)."""
    sentences, _ = semcor_corpus()
    return corpus_index(sentences)


@st.cache_resource(show_spinner=False)
def semcor_split() -> WsdSplit:
    """The WSD probe's SemCor training split: piece layout, kept rows, feature-cache key (once per server)."""
    return builtin_train(None)


def _piece_rows(emb, layers=None, progress=None) -> PieceRows:
    """``viz.corpus_search``'s callback: the split's rows at a layer, from the feature cache (extracted when
    missing; ``layers``: those read now, default all)."""
    split = semcor_split()
    feats = get_features(
        emb, split.feature_key, split.layout.sentences, layers, keep=split.keep, progress=progress, show_progress=False
    )
    return feats.layer


def _is_cached(emb, layers) -> bool:
    return has_layers(emb, semcor_split().feature_key, layers)


@st.cache_resource(show_spinner=False, max_entries=2)
def _matrix(name: str, fingerprint: str, layer: int) -> np.ndarray:
    # ~225k × dim float32 unit rows (350 MB for MiniLM): two (model, layer) pairs are kept per server.
    return corpus_vectors(semcor_split().layout, _piece_rows(_cached_embedder(name), [layer]), layer)


@st.cache_resource(show_spinner=False, max_entries=4)
def _cached_rows(name: str, fingerprint: str) -> PieceRows:
    return _piece_rows(_cached_embedder(name))


def cached_occurrence_vectors(model: str, occs) -> np.ndarray | None:
    """(layers, len(occs), dim) vectors of SemCor occurrences read from the WSD probe's feature cache, or
    None (an occurrence not from SemCor, or the cache lacks a layer of ``model``): a new word then costs
    a few row reads instead of embedding its sentences."""
    if not occs or any(o.ref is None for o in occs):
        return None
    emb = get_embedder(model)
    if not _is_cached(emb, range(emb.num_layers)):
        return None
    rows = [cached_index().row_of(*o.ref) for o in occs]
    if any(r is None for r in rows):
        return None
    return rows_vectors(semcor_split().layout, _cached_rows(model, emb.fingerprint()), emb.num_layers, rows)


def corpus_panel(
    model: str,
    layer: int,
    query: np.ndarray,
    *,
    key: str,
    ref: tuple[int, int] | None = None,
    query_key: str | None = None,
    what: str = "",
) -> None:
    """Nearest SemCor occurrences of ``query`` (a vector at ``layer`` of ``model``); ``ref`` excludes the
    query's own SemCor token, ``query_key`` (its WordNet sense) marks hits of the same sense."""
    emb = get_embedder(model)
    if not _is_cached(emb, [layer]):
        st.info(
            f"The corpus index of **{md(model)}** is not built yet: it embeds all 37k SemCor sentences once "
            "(the same features the WSD probe uses; a few minutes on this CPU), then every search is "
            "instant. Or run `python -m probes wsd --model " + md(model) + "`."
        )
        if not st.button(f"Build the SemCor index for {model}", key=f"{key}_build"):
            return
        bar = st.progress(0.0, text="Embedding SemCor…")
        _piece_rows(emb, [layer], progress=lambda f, msg: bar.progress(min(1.0, max(0.0, f)), text=msg))
        bar.empty()
    with st.spinner("Reading SemCor's vectors at this layer (once per model and layer)…"):
        index = cached_index()
        Xn = _matrix(model, emb.fingerprint(), int(layer))
    if len(index) != Xn.shape[0]:
        raise ValueError(
            f"The corpus index has {len(index)} rows but the cached vectors {Xn.shape[0]}; rebuild the feature cache."
        )
    k = st.slider("Corpus neighbours", 5, 50, 20, step=5, key=f"{key}_k")
    exclude = index.row_of(*ref) if ref is not None else None
    hits = nearest(Xn, query, k, exclude=exclude)
    sentences, _ = semcor_corpus()
    df = hits_frame(hits, index, sentences, sense_label, query_key=query_key)
    share = same_sense_share(hits, index, query_key) if query_key else None
    st.caption(
        f"The {len(hits)} nearest of {len(index):,} sense-tagged SemCor occurrences (cosine, full "
        f"{Xn.shape[1]} dimensions, {md(model)} layer {layer}){' to ' + md(what) if what else ''}"
        + (f"; **{share:.0%}** have the query's sense ({md(sense_label(query_key))})." if share is not None else ".")
    )
    name = file_stem("corpus", model, f"layer{layer}", what)
    chart(
        hit_histograms(df),
        name + "-histogram",
        key=f"{key}_hist",
        data=lambda: df.to_csv(index=False).encode("utf-8"),
        data_label="Hits (CSV)",
    )
    st.dataframe(
        df, hide_index=True, width="stretch", column_config={"context": st.column_config.TextColumn(width="large")}
    )
    download("Hits (JSON)", lambda: frame_json(df), f"{name}.json", key=f"{key}_json", mime="application/json")
