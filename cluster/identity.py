"""What a sweep's driver knows of a model before any worker loads it: its content key and its resolved spec.

    key, note = model_content(get_spec("my-vectors"))   # sha256 of the files' digests; note: None
    key, note = model_content(get_spec("hf:EleutherAI/pythia-160m@main"))   # "hub:<commit sha>"

Design notes:

- **Content, not name.** The feature cache keys an entry on the loaded model's fingerprint
  (``Embedder.fingerprint``: the files' bytes); a sweep must know the same before it decides what is
  already done, without loading weights on the driver. So the key is the SHA-256 of the model's files
  (``corpora.digests.file_digests``: each file hashed once per file state and remembered), of its
  loader arguments and of its ``random:`` seed. A rewritten vectors file or a retrained asset changes
  it; a moved or renamed one does not.
- **Hub models: the resolved commit.** ``hf:ORG/NAME@main`` names a branch that moves: the key is the
  commit the hub resolves it to now (``HfApi.model_info``, a few hundred bytes). Offline, the commit of
  the downloaded snapshot is used and the note says so; with neither, the key is the reference text
  and the note says it is a guess (a later online sweep re-runs the tasks once).
- **The data too.** A task's result depends on its data as much as on its model: ``data_content`` is the
  SHA-256 of the data directory's files and of the user's files a probe's options name (``--train``,
  ``--test`` …), so an edited test file or another ``EMBPROBE_DATA`` with other contents is a new task.
- **Hub configs.** ``hub_config`` fetches a not-yet-downloaded checkpoint's ``config.json`` alone, for
  ``cluster.resources`` to size its tasks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpora.digests import content_files, file_digests
from corpora.paths import data_dir_or_none
from probes.inputs import InputFile


def _hub():
    import huggingface_hub  # lazy: huggingface_hub, only for hf: models

    return huggingface_hub


def hub_config(repo_id: str, revision: str | None) -> tuple[dict | None, str]:
    """(the hub's config.json of a model not downloaded yet, or None offline; a note saying which)."""
    try:
        path = _hub().hf_hub_download(repo_id, "config.json", revision=revision)  # a few KB, never the weights
        with open(path, encoding="utf-8") as fh:
            return json.load(fh), f"sized from hf:{repo_id}'s config.json (not downloaded yet)"
    except Exception as exc:  # noqa: BLE001 - offline, gated, no such file: all fall back to a guess
        return (
            None,
            f"guessed: hf:{repo_id} is not downloaded and its config.json is out of reach ({type(exc).__name__})",
        )


def _hub_commit(repo_id: str, revision: str | None, snapshot: Path | None) -> tuple[str, str | None]:
    try:
        return str(_hub().HfApi().model_info(repo_id, revision=revision, timeout=10).sha), None
    except Exception as exc:  # noqa: BLE001 - offline, no such repo, rate limit: all fall back the same way
        why = f"{type(exc).__name__}"
    if snapshot is not None:
        return snapshot.name, f"hub not reachable ({why}): keyed on the downloaded snapshot {snapshot.name[:12]}"
    return "unresolved", f"hub not reachable ({why}) and nothing downloaded: keyed on the reference (a guess)"


FILES_NOT_FOUND = "files not found"  # the note of a model whose files are not on this machine


def files_missing(spec) -> bool:
    """Whether a local model's files (its folder or file, and any outside it) are not on this machine; a hub model
    is never missing here (it is fetched where it runs)."""
    source = spec.source
    if source.kind == "hub":
        return False
    location = source.directory()
    return location is None or not location.exists() or not all(Path(p).is_file() for p in source.also)


def model_content(spec) -> tuple[str, str | None]:
    """(content key, note) of a ``models.spec.ModelSpec``; the note says when the key is not the files'."""
    source = spec.source
    head = json.dumps([spec.family, spec.loader, spec.kwargs, spec.random_seed], sort_keys=True, default=str)
    note = None
    if source.kind == "hub":
        commit, note = _hub_commit(source.location, source.subdir or None, source.directory())
        body = f"hub:{source.location}@{commit}"
    elif files_missing(spec):
        body, note = "missing", f"{FILES_NOT_FOUND} ({source.label()}): keyed on the name"
    else:
        location = source.directory()
        base = location if location.is_dir() else location.parent
        inside = sorted((str(p.relative_to(base)), d) for p, d in file_digests(content_files(location)).items())
        also = file_digests(source.also)  # files of the model outside its folder: by name and bytes
        body = json.dumps(inside + sorted((p.name, d) for p, d in also.items()))
    return hashlib.sha256(f"{head}|{body}".encode()).hexdigest()[:16], note


def data_content(options: dict[str, Any], inputs: Sequence[InputFile] = ()) -> str:
    """The content key of what a probe with these runner ``options`` reads: the data directory's files (built-in
    data; none when there is no data directory), every file an option names (the user's own data) and the files
    the probe's ``inputs`` read beside those (``InputFile.companions``: a WSD XML's gold keys)."""
    root = data_dir_or_none()
    built_in = content_files(root) if root is not None and root.is_dir() else []
    named = {Path(v) for v in options.values() if isinstance(v, str | Path) and Path(v).is_file()}
    for f in inputs:
        if isinstance(options.get(f.role), str | Path):
            named |= {p for p in f.companions(Path(options[f.role])) if p.is_file()}
    named = sorted(named)
    digests = file_digests([*built_in, *named])
    body = [(str(p.relative_to(root)), digests[p]) for p in built_in] + [(str(p), digests[p]) for p in named]
    return hashlib.sha256(json.dumps(body).encode()).hexdigest()[:16]
