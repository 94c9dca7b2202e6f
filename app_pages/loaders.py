"""What the app loads once and shares: models, their vectors and attention, SemCor, uploaded samples.

Every session of a server shares one loaded model (the registry's, ``models.registry.load_embedder``, which loads it
again when its files change) and the vectors it made (``st.cache_data``, keyed by the model's fingerprint, so
retrained weights are never mixed up); a spinner or a progress bar says when a call has to compute.

- :func:`get_embedder`, :func:`unload` — the loaded model ``name`` (``models.registry``), dropped on demand.
- :func:`embed_sentences`, :func:`piece_attention` — per-sentence vectors and attention, cached across reruns.
- :func:`semcor_corpus` — SemCor and its lemma index, once per server (after ``app_pages.warmup``'s read).
- :func:`occurrence_vectors_progress` — the vectors of a word's occurrences, chunk by chunk with a progress bar.
- :func:`lexical_source` — an uploaded lexical-sample file, parsed once.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages.common import MAX_UPLOAD_MB, log
from app_pages.warmup import wait_warmup
from corpora.semcor import load_semcor
from models.base import Embedder
from models.registry import load_embedder, loaded_models, unload_embedder
from viz.lexical_sample import LexicalSampleSource
from viz.polysemy import build_lemma_index, occurrence_vectors

# ---------------------------------------------------------------------------- models


def get_embedder(name: str) -> Embedder:
    """The shared, loaded model ``name`` (a spinner the first time). The registry holds one instance per process,
    under a lock, and loads it again when its files changed on disk (~0.1 ms a lookup); no Streamlit cache sits in
    front of it: one kept serving a replaced model's old vectors under its old fingerprint."""
    if name not in loaded_models():
        log.info("loading model %s", name)
        with st.spinner(f"Loading {name}… (once per server; later sessions share it)"):
            return load_embedder(name)
    return load_embedder(name)


def unload(name: str) -> bool:
    return unload_embedder(name)


# ---------------------------------------------------------------------------- cached extraction


@st.cache_data(show_spinner=False, max_entries=64)
def _embed_cached(
    name: str, fingerprint: str, sentences: tuple[tuple[str, ...], ...], with_attention: bool
) -> list[dict]:
    emb = load_embedder(name)
    outs = emb.embed([list(s) for s in sentences], with_attention=with_attention)
    return [{"words": o.words, "vectors": o.vectors, "oov": o.oov, "attentions": o.attentions} for o in outs]


def embed_sentences(name: str, sentences: list[list[str]], with_attention: bool = False) -> list[dict]:
    """Per-sentence dicts (words, vectors (L, n, dim), oov, attentions), cached across reruns.

    The cache key includes the model's fingerprint, so retrained weights are never mixed up.
    """
    emb = get_embedder(name)
    with st.spinner(f"Running {name}…"):
        return _embed_cached(name, emb.fingerprint(), tuple(tuple(s) for s in sentences), with_attention)


@st.cache_data(show_spinner=False, max_entries=32)
def _piece_attention_cached(name: str, fingerprint: str, words: tuple[str, ...]) -> dict:
    pa = load_embedder(name).piece_attention(list(words))
    return {"pieces": list(pa.pieces), "word_ids": list(pa.word_ids), "attentions": pa.attentions}


def piece_attention(name: str, words: list[str]) -> dict:
    """Attention over the model's own pieces (special tokens included), cached across reruns."""
    emb = get_embedder(name)
    with st.spinner(f"Running {name}…"):
        return _piece_attention_cached(name, emb.fingerprint(), tuple(words))


# ---------------------------------------------------------------------------- SemCor


@st.cache_resource(show_spinner=False)
def semcor_corpus():
    """(SemCor sentences, lemma index): parsed once per server process, shared by all sessions."""
    wait_warmup()
    log.info("loading SemCor")
    sentences, _stats = load_semcor()
    return sentences, build_lemma_index(sentences)


@st.cache_data(show_spinner=False, max_entries=256)
def _occurrence_chunk(name: str, fingerprint: str, occs: tuple) -> np.ndarray:
    emb = load_embedder(name)
    return occurrence_vectors(lambda sents: [o.vectors for o in emb.embed(sents)], list(occs))


def occurrence_vectors_progress(name: str, occs: list, chunk: int = 24):
    """(layers, len(occs), dim) vectors of the occurrences, with a progress bar; cached per chunk."""
    emb = get_embedder(name)
    fp = emb.fingerprint()
    parts = []
    bar = st.progress(0.0, text=f"Embedding {len(occs)} occurrences with {name}…")
    for start in range(0, len(occs), chunk):
        parts.append(_occurrence_chunk(name, fp, tuple(occs[start : start + chunk])))
        done = min(len(occs), start + chunk)
        bar.progress(done / len(occs), text=f"Embedding occurrences with {name}: {done}/{len(occs)}")
    bar.empty()
    return np.concatenate(parts, axis=1)


@st.cache_data(show_spinner=False, max_entries=8)
def lexical_source(data: bytes, name: str) -> LexicalSampleSource:
    """An uploaded lexical-sample file (``corpora.lexical_sample``), parsed once per content."""
    return LexicalSampleSource.from_upload(data, name, max_mb=MAX_UPLOAD_MB)
