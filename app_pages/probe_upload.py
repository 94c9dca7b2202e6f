"""The Probes page's "Your data" tab: upload a probe's input files, preview them, run the probe.

No probe is named here: every registered probe whose ``ProbeSpec`` declares ``inputs``
(``probes.inputs``) is a task, with one uploader per declared file, one widget per option the app
shows (``Option.in_app``; ``choices``: a selectbox, ``bool``: a checkbox, numbers: a number input,
else text; each with its help), the spec's ``preview`` and the one run path ``probes.run.run_probe``.

1. Upload the files (each at most ``MAX_MB``, the app's one ``MAX_UPLOAD_MB``, stated on the page; a
   bigger file is refused naming the limit — the command line streams files of any size). An optional
   file left out may imply options (``InputFile.if_absent``: without a test file the WSD probe
   cross-validates on the training file).
2. The files are stored by content under ``<cache>/uploads/<sha256>/`` (the same bytes are the same
   dataset: same ``NAME@HASH``, same cached vectors) and parsed exactly as the probe will read them:
   counts, labels and a sample are shown before anything runs; a malformed file is one message
   naming the file and line, and what this run stored is removed (``discard_uploads``).
3. "Run" runs the probe and its baselines with a progress bar and saves the results to
   ``<cache>/results``, where the "Saved results" tab compares them layer by layer with every other
   run of that probe.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import (
    MAX_UPLOAD_MB as MAX_MB,  # the app's one upload limit (a test lowers MAX_MB)
    log,
    md,
    model_select,
    safe,
)
from app_pages.loaders import get_embedder
from app_pages.warmup import wait_warmup
from corpora.errors import LabError
from corpora.paths import cache_dir
from corpora.temps import remove_stale_temps, write_atomically
from models import DEFAULT_STATIC_MODEL
from probes.errors import ResultsNotSavedError
from probes.inputs import InputFile, Preview
from probes.registry import Option, ProbeSpec, all_probes
from probes.results import ProbeResult, default_results_dir, results_frame
from probes.run import run_probe
from viz.results import label_dir

DEFAULT_LIMIT = 300
OPTION_COLUMNS = 4


#: The longest stored name: a file system's limit is 255 bytes, and the browser may send any name.
MAX_NAME = 100
UPLOADS_KEEP_MB = 1024  # the uploads folder's size above which the least recently used uploads are removed


def stored_name(name: str) -> str:
    """An upload's file name as stored: letters, digits and ``._-`` (the rest ``_``), no leading dot (``..`` and
    hidden names), at most ``MAX_NAME`` characters with its suffix kept (the readers choose a format by it)."""
    safe = re.sub(r"[^0-9A-Za-z._-]+", "_", Path(name).name).lstrip(".") or "upload"
    suffix = Path(safe).suffix[:20]
    return safe if len(safe) <= MAX_NAME else safe[: MAX_NAME - len(suffix)] + suffix


def save_upload(name: str, data: bytes) -> tuple[Path, bool]:
    """The bytes under ``<cache>/uploads/<sha256[:16]>/<stored name>`` (written once, atomically: each writer its own
    temporary, ``corpora.temps.write_atomically``, so two sessions storing the same file at once do not share one), and
    whether this call wrote them. A folder that cannot take them is a ``LabError``."""
    folder = cache_dir() / "uploads" / hashlib.sha256(data).hexdigest()[:16]
    path = folder / stored_name(name)
    if path.is_file():
        with contextlib.suppress(OSError):
            os.utime(folder)  # used now: the last to be pruned
        return path, False
    try:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(folder, log)  # a killed store's
        write_atomically(path, data)  # this writer's own temporary, the umask's mode (the command shown names it)
    except OSError as exc:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if empty: a full disk left no file, and no folder for it either
        raise LabError(
            f"Could not store the upload {name!r} in the cache's uploads folder: {exc.strerror or exc}."
        ) from None
    prune_uploads(folder.parent, folder, UPLOADS_KEEP_MB * 2**20)
    return path, True


def prune_uploads(root: Path, keep: Path, limit_bytes: int) -> None:
    """Remove the least recently used uploads (whole folders, never ``keep``) while ``root`` holds more than
    ``limit_bytes``: on a server shared over a network every visitor's valid file stayed for ever. A command shown
    for a removed upload then says its file is missing; the uploader still holds the bytes."""
    folders = []
    for folder in root.iterdir():
        with contextlib.suppress(OSError):
            folders.append((folder.stat().st_mtime, sum(f.stat().st_size for f in folder.iterdir()), folder))
    total = sum(size for _, size, _ in folders)
    for _, size, folder in sorted(folders, key=lambda f: f[0]):
        if total <= limit_bytes:
            return
        if folder != keep:
            shutil.rmtree(folder, ignore_errors=True)
            total -= size


def discard_uploads(paths: list[Path]) -> None:
    """Remove the files this run stored when the probe cannot read them all (and their folders once empty): the
    uploaders still hold the bytes, so the next run stores them again; files an earlier run stored are kept."""
    for path in paths:
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only if empty: another name for the same bytes may live there


def upload_hint(inputs: tuple[InputFile, ...]) -> str:
    """What to upload: "Upload a training file and a test file (a dev file is optional) to see what they hold." """
    required = [f"a {f.noun}" for f in inputs if f.required]
    optional = [f"a {f.noun}" for f in inputs if not f.required]
    text = "Upload " + " and ".join(required)
    if optional:
        text += f" ({' and '.join(optional)} {'is' if len(optional) == 1 else 'are'} optional)"
    return text + (" to see what they hold." if len(required) > 1 else " to see what it holds.")


def option_widget(spec: ProbeSpec, opt: Option, container) -> Any:
    """One option's widget; its value (None: left at the option's default)."""
    key, label = f"up_{spec.name}_{opt.name}", opt.flag
    if opt.choices is not None:
        values = ([None] if opt.default is None else []) + list(opt.choices)
        return container.selectbox(
            label,
            values,
            index=values.index(opt.default),
            key=key,
            help=opt.help,
            format_func=lambda v: "(default)" if v is None else str(v),
        )
    if opt.type is bool:
        return container.checkbox(label, bool(opt.default), key=key, help=opt.help)
    if opt.type in (int, float):
        return container.number_input(
            label,
            value=opt.default,
            step=1 if opt.type is int else None,
            key=key,
            help=opt.help,
            format="%d" if opt.type is int else "%g",
        )
    text = container.text_input(label, "" if opt.default is None else str(opt.default), key=key, help=opt.help)
    return text.strip() or None


def option_values(spec: ProbeSpec) -> dict[str, Any]:
    """The values of the spec's in-app options (its input files are the uploaders')."""
    roles = {f.role for f in spec.inputs}
    shown = [o for o in spec.options if o.in_app and o.name not in roles]
    values = {}
    for i in range(0, len(shown), OPTION_COLUMNS):
        for opt, col in zip(shown[i : i + OPTION_COLUMNS], st.columns(OPTION_COLUMNS)):
            values[opt.name] = option_widget(spec, opt, col)
    return values


def uploads(spec: ProbeSpec) -> tuple[dict[str, Path], dict[str, str], list[Path]] | None:
    """Saved paths of the uploaded files by role, each saved path's upload name (for messages: the user knows
    bad.conllu, not the cache's path) and the paths this run wrote; None (with a message) until the required ones
    are there."""
    files = {
        f.role: col.file_uploader(
            f"{f.role.capitalize()} file" + ("" if f.required else " (optional)"),
            key=f"up_{spec.name}_{f.role}",
            max_upload_size=max(int(MAX_MB), 1),
            help=" or ".join(f.formats) + (f": {f.help}" if f.help else ""),
        )
        for f, col in zip(spec.inputs, st.columns(len(spec.inputs)))
    }
    for f in files.values():
        if f is not None and f.size > MAX_MB * 2**20:
            needed = " ".join(f"--{i.role} FILE" for i in spec.inputs if i.required)
            st.error(
                f"{md(f.name)} is {f.size / 2**20:.1f} MB: uploads are limited to {MAX_MB:g} MB per file. "
                f"Use the command line for bigger files (it reads them as a stream): "
                f"python -m probes {spec.name} --model M {needed}"
            )
            return None
    if any(files[f.role] is None for f in spec.inputs if f.required):
        st.info(upload_hint(spec.inputs))
        return None
    saved = {role: save_upload(f.name, f.getvalue()) for role, f in files.items() if f is not None}
    paths = {role: path for role, (path, _) in saved.items()}
    written = [path for path, new in saved.values() if new]
    return paths, {str(paths[role]): f.name for role, f in files.items() if f is not None}, written


def show_preview(preview: Preview) -> None:
    st.markdown(f"**{md(preview.dataset)}** — {md(preview.description)}")  # the user's names, never Markdown
    st.dataframe(preview.counts, hide_index=True, width="stretch")
    c1, c2 = st.columns([1, 2])
    c1.dataframe(preview.labels, hide_index=True, height=260, width="stretch")
    c2.dataframe(preview.sample, hide_index=True, height=260, width="stretch")


def command_of(spec: ProbeSpec, model: str, limit: int, options: dict) -> str:
    """The command line that runs the same (files by their stored path; options at their default left out)."""
    args = ["python", "-m", "probes", spec.name, "--model", model]
    for opt in spec.options:
        value = options.get(opt.name)
        if value is not None and value is not False and value != opt.default:
            args += [opt.flag] if value is True else [opt.flag, str(value)]
    return shlex.join(args + ["--limit", str(limit)])


def run_upload(spec: ProbeSpec, model: str, limit: int, options: dict, progress) -> list[ProbeResult]:
    """The probe and its baselines on the uploaded files, saved where the Saved results tab reads them."""
    emb = get_embedder(model)
    wait_warmup()
    return run_probe(
        spec.name,
        emb,
        limit=limit,
        options=options,
        results_dir=default_results_dir(),
        command=command_of(spec, model, limit, options),
        progress=progress,
        show_progress=False,
    ).results


def upload_tab(show_results: Callable[[ProbeSpec, pd.DataFrame, str], None]) -> None:
    """The tab; ``show_results(spec, results frame, key)`` draws a probe's layer-by-layer results."""
    st.caption(
        f"Probe your own data: pick a probe that reads files, upload them, see what they hold, run. Files "
        f"up to **{MAX_MB:g} MB** each; the formats are in docs/datasets.md. Runs are saved and appear in "
        f"the Saved results tab ({label_dir(default_results_dir())}) beside the other runs of the probe."
    )
    specs = {spec.name: spec for spec in all_probes() if spec.inputs}
    name = st.radio(
        "Task",
        list(specs),
        horizontal=True,
        key=state.bind("up_task", next(iter(specs)), list(specs), param="up_task"),
        format_func=lambda n: f"{specs[n].short_title} ({' or '.join(specs[n].inputs[0].formats)})",
    )
    spec = specs[name]
    st.caption(spec.description)
    uploaded = uploads(spec)
    options = option_values(spec)
    if uploaded is None:
        return
    paths, names, written = uploaded
    options.update({role: str(p) for role, p in paths.items()})
    for f in spec.inputs:
        options.update({} if f.role in paths else f.if_absent)
    c1, c2 = st.columns([2, 1])
    limit = int(
        c2.number_input(
            "Sentences per file",
            min_value=1,
            max_value=50_000,
            step=100,
            key=state.bind("up_limit", DEFAULT_LIMIT, lo=1, hi=50_000, param="up_limit"),
            help="The first N sentences (lines) of each file.",
        )
    )
    if spec.preview is not None:
        preview = None
        with safe("read the uploaded files", names=names):
            preview = spec.preview(limit, spec.options_from(options))
        if preview is None:
            discard_uploads(written)
            return
        show_preview(preview)
    with c1:
        model = model_select("Model", None, key="up_model", default=DEFAULT_STATIC_MODEL, param="up_model")
    if model is None:
        return
    run_key = (name, model, limit, tuple(sorted((k, str(v)) for k, v in options.items())))
    if st.button("Run on my data", type="primary", key="up_run"):
        with safe(f"run the {name} probe on {model}", names=names):
            bar = st.progress(0.0, text=f"Starting the {name} probe on {model}…")

            def progress(frac: float, msg: str = "") -> None:
                bar.progress(float(min(max(frac, 0.0), 1.0)), text=msg or f"{name} probe on {model}")

            saved = f"saved to {label_dir(default_results_dir())}"  # cache/results, or where $EMBPROBE_CACHE says
            try:
                results = run_upload(spec, model, limit, options, progress)
            except ResultsNotSavedError as exc:  # a full disk after the run: its numbers, and why they are not kept
                results, saved = exc.run.results, f"NOT saved: {exc}"
            log.info("upload %s probe on %s (%s, limit %s)", name, model, results[0].dataset, limit)
            st.session_state["up_done"] = (run_key, results, saved)
            bar.empty()
    done = st.session_state.get("up_done")
    if done is not None and done[0] == run_key:
        said = f"{spec.short_title} on {model}, {done[1][0].dataset}: done; {done[2]}"
        (st.success if done[2].startswith("saved") else st.warning)(said if said.endswith(".") else said + ".")
        for warning in dict.fromkeys(w for res in done[1] if (w := res.extra.get("warning"))):  # e.g. unseen labels
            st.warning(md(warning))
        show_results(spec, results_frame(done[1]), "upload")
