"""The Probes page's "Your data" tab: upload token-labelled, span or word-sense files, preview them, run a probe.

1. Upload train / optional dev / test files (word senses: a lexical-sample TSV to train on and an
   optional one to test on, else k-fold cross-validation on the training file) (each at most ``MAX_MB``, stated on the page; a bigger
   file is refused naming the limit — the command line streams files of any size).
2. The files are stored by content under ``<cache>/uploads/<sha256>/`` (the same bytes are the same
   dataset: same ``NAME@HASH``, same cached vectors) and parsed exactly as the probe will read them:
   counts, labels and a sample are shown before anything runs; a malformed file is one message
   naming the file and line.
3. "Run" runs the ``tag``, ``span`` or ``wsd`` probe and its baseline with a progress bar and saves the
   results to ``<cache>/results``, where the "Saved results" tab compares them layer by layer with
   every other run of that probe.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path
from typing import Callable

import pandas as pd
import streamlit as st

from app_pages.common import get_embedder, log, model_select, safe, wait_warmup
from corpora.lexical_sample import read_lexical_sample
from corpora.paths import cache_dir
from probes.tasks import span as span_probe
from probes.tasks import tag as tag_probe
from probes.tasks.preview import sense_preview, span_preview, token_preview
from probes.registry import ProbeSpec, RunContext, get_probe
from probes.results import ProbeResult, results_frame, save_result

#: The upload limit per file (MB): the server's ``server.maxUploadSize`` (.streamlit/config.toml), or a
#: lower ``$EMBPROBE_UPLOAD_MB``. Streamlit refuses bigger files in the browser, naming it; the page states it.
MAX_MB = min(float(os.environ.get("EMBPROBE_UPLOAD_MB") or "inf"), float(st.get_option("server.maxUploadSize")))
TASKS = {"tag": "Token labels (CoNLL-U or a column file)", "span": "Spans (edge-probing JSON lines)",
         "wsd": "Word senses (lexical-sample TSV)"}
#: The files each task takes, and which of them it needs.
ROLES = {"tag": ("train", "dev", "test"), "span": ("train", "dev", "test"), "wsd": ("train", "test")}
REQUIRED = {"tag": ("train", "test"), "span": ("train", "test"), "wsd": ("train",)}
FOLDS = 5
DEFAULT_LIMIT = 300


def save_upload(name: str, data: bytes) -> Path:
    """The bytes under ``<cache>/uploads/<sha256[:16]>/<name>`` (written once, atomically)."""
    folder = cache_dir() / "uploads" / hashlib.sha256(data).hexdigest()[:16]
    path = folder / (re.sub(r"[^0-9A-Za-z._-]+", "_", Path(name).name) or "upload")
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


def _options(task: str) -> dict:
    """The probe's options from the widgets (files added later)."""
    if task == "wsd":
        st.caption("One occurrence per line: `sentence<TAB>target word index (from 0)<TAB>label[<TAB>lemma]`. "
                   f"Without a test file the probe is scored by {FOLDS}-fold cross-validation on the training file. "
                   "Framework XML + gold keys: use the command line (python -m probes wsd --train FILE.xml …).")
        return {"format": "tsv"}
    if task == "span":
        return {"pooling": st.selectbox("Span vector", ["mean", "endpoints"], key="up_pooling",
                                        help="mean of the span's words, or its first and last word concatenated")}
    c1, c2, c3, c4 = st.columns(4)
    fmt = c1.selectbox("Format", ["auto", "conllu", "columns"], key="up_format",
                       help="auto: CoNLL-U for *.conllu files, else a whitespace/tab column file")
    column = c2.text_input("Label column", "", key="up_column", placeholder="UPOS  or  1",
                           help="CoNLL-U: UPOS, XPOS, DEPREL, LEMMA, feats:KEY, misc:KEY (default UPOS). "
                                "Column file: the field index from 0, -1 = last (default -1).")
    scheme = c3.selectbox("Scoring", ["tag", "bio"], key="up_scheme",
                          help="tag: token accuracy; bio: also conlleval span F1 (NER, chunks)")
    skip = c4.text_input("Skip label", "", key="up_skip", help="words with this label are neither trained on nor "
                                                               "scored (e.g. _ with feats:Number)")
    return {"format": None if fmt == "auto" else fmt, "column": column.strip() or None, "scheme": scheme,
            "skip_label": skip.strip() or None}


def _uploads(task: str) -> dict[str, Path] | None:
    """Saved paths of the uploaded files; None (with a message) until train and test are there."""
    roles = ROLES[task]
    cols = st.columns(len(roles))
    files = {role: col.file_uploader(f"{role.capitalize()} file" + ("" if role in REQUIRED[task] else " (optional)"),
                                     key=f"up_{task}_{role}", max_upload_size=max(int(MAX_MB), 1))
             for role, col in zip(roles, cols)}
    for role, f in files.items():
        if f is not None and f.size > MAX_MB * 2**20:
            st.error(f"{f.name} is {f.size / 2**20:.1f} MB: uploads are limited to {MAX_MB:g} MB per file. "
                     f"Use the command line for bigger files (it reads them as a stream): "
                     f"python -m probes {task} --model M --train FILE --test FILE")
            return None
    if any(files[role] is None for role in REQUIRED[task]):
        st.info("Upload a training file and a test file (a dev file is optional) to see what they hold."
                if task != "wsd" else "Upload a training file (a test file is optional) to see what it holds.")
        return None
    return {role: save_upload(f.name, f.getvalue()) for role, f in files.items() if f is not None}


def _preview(task: str, limit: int, options: dict) -> str:
    """Parse the files as the probe will and show what they hold; returns the dataset label."""
    if task == "tag":
        files, what, train, evals = tag_probe.load_splits(limit, **options)
        counts, labels, sample = token_preview(train, evals)
        st.markdown(f"**{files.label}** — label column **{what}**, first {limit} sentences of each file")
    elif task == "wsd":
        train = read_lexical_sample(options["train"])[:limit]
        evals = [read_lexical_sample(options["test"])[:limit]] if options.get("test") else []
        counts, labels, sample = sense_preview(train, evals)
        label = options.get("name") or Path(options["train"]).name
        st.markdown(f"**{label}** — first {limit} lines of each file"
                    + ("" if evals else f"; scored by {FOLDS}-fold cross-validation"))
        files = None
    else:
        files, train, evals = span_probe.load_splits(limit, **options)
        counts, labels, sample = span_preview(train, evals)
        st.markdown(f"**{files.label}** — {'span pairs' if train.span2 is not None else 'single spans'}, "
                    f"first {limit} lines of each file")
    st.dataframe(counts, hide_index=True, width="stretch")
    c1, c2 = st.columns([1, 2])
    c1.dataframe(labels, hide_index=True, height=260, width="stretch")
    c2.dataframe(sample, hide_index=True, height=260, width="stretch")
    return label if files is None else files.label


def command_of(task: str, model: str, limit: int, options: dict) -> str:
    args = ["python", "-m", "probes", task, "--model", model]
    for name, value in options.items():
        if value is not None:
            args += ["--" + name.replace("_", "-"), str(value)]
    return " ".join(shlex.quote(a) for a in args + ["--limit", str(limit)])


def run_upload(spec: ProbeSpec, model: str, limit: int, options: dict, progress) -> list[ProbeResult]:
    """The probe and its baseline on the uploaded files, saved where the Saved results tab reads them."""
    emb = get_embedder(model)
    wait_warmup()
    spec.check_model(emb)
    ctx = RunContext(limit=limit, progress=progress, show_progress=False)
    parsed = spec.options_from(options)
    command = command_of(spec.name, model, limit, options)
    results = [spec.run(emb, None, ctx, **parsed).stamped(command),
               *(b.stamped(command) for b in spec.baselines(ctx, **parsed))]
    out = cache_dir() / "results"
    for res in results:
        save_result(res, out)
    return results


def upload_tab(show_results: Callable[[ProbeSpec, pd.DataFrame, str], None]) -> None:
    """The tab; ``show_results(spec, results frame, key)`` draws a probe's layer-by-layer results."""
    st.caption(f"Probe your own data: token labels (POS, morphology, dependency labels, NER/chunks as BIO) in "
               f"CoNLL-U or a column file, or span labels in the edge-probing JSON-lines format. Files up to "
               f"**{MAX_MB:g} MB** each; the formats are in docs/datasets.md. Runs are saved and appear in the "
               f"Saved results tab (cache/results) beside the other runs of the probe.")
    task = st.radio("Task", list(TASKS), format_func=TASKS.get, horizontal=True, key="up_task")
    paths = _uploads(task)
    options = _options(task)
    if paths is None:
        return
    options.update({role: str(p) for role, p in paths.items()})
    if task == "wsd" and "test" not in paths:
        options["folds"] = FOLDS
    c1, c2, c3 = st.columns([2, 1, 2])
    limit = int(c2.number_input("Sentences per file", min_value=1, max_value=50_000, value=DEFAULT_LIMIT,
                                step=100, key="up_limit", help="The first N sentences (lines) of each file."))
    if task != "wsd":   # the WSD probe names file data by the file and its content hash
        options["name"] = c3.text_input("Dataset name", "", key="up_name",
                                        help="In results and tables (default: from the file names)").strip() or None
    label = None
    with safe("read the uploaded files"):
        label = _preview(task, limit, options)
    if label is None:
        return
    with c1:
        model = model_select("Model", None, key="up_model", default="glove-6b-50d")
    if model is None:
        return
    spec = get_probe(task)
    run_key = (task, model, limit, tuple(sorted((k, str(v)) for k, v in options.items())))
    if st.button("Run on my data", type="primary", key="up_run"):
        with safe(f"run the {task} probe on {model}"):
            bar = st.progress(0.0, text=f"Starting the {task} probe on {model}…")

            def progress(frac: float, msg: str = "") -> None:
                bar.progress(float(min(max(frac, 0.0), 1.0)), text=msg or f"{task} probe on {model}")

            results = run_upload(spec, model, limit, options, progress)
            log.info("upload %s probe on %s (%s, limit %s)", task, model, label, limit)
            st.session_state["up_done"] = (run_key, results)
            bar.empty()
    done = st.session_state.get("up_done")
    if done is not None and done[0] == run_key:
        st.success(f"{spec.short_title} on {model}, {label}: done; saved to cache/results.")
        show_results(spec, results_frame(done[1]), "upload")
