"""``hf:ORG/NAME[@REVISION]``: a Hugging Face Hub model, fetched into the hub's usual cache.

The download is ``huggingface_hub.snapshot_download`` (resumable, shared with every other HF tool, in
``$HF_HUB_CACHE`` / ``~/.cache/huggingface/hub``), restricted to what the lab reads: config, tokenizer
files and safetensors weights (``.bin`` only when a repository has no safetensors). Once a snapshot is
in the cache it is used offline (``HF_HUB_OFFLINE=1``) too.

Without network, or with ``HF_HUB_OFFLINE=1`` and no cached copy, the user gets one message that
names the id, says the hub cannot be reached and shows how to use a local copy — never a traceback.
Custom modelling code from the hub is never run (``models.transformer`` refuses ``trust_remote_code``).
"""

from __future__ import annotations

import re
from pathlib import Path

from models.errors import ModelLoadError

PREFIX = "hf:"
REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")  # fullmatch: no final newline
WANTED = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"]


def parse_hub_id(ref: str) -> tuple[str, str | None]:
    """``hf:ORG/NAME[@REV]`` → (repo id, revision or None); a malformed id is a ModelLoadError."""
    body = ref[len(PREFIX) :] if ref.startswith(PREFIX) else ref
    repo_id, _, revision = body.partition("@")
    if not REPO_RE.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id or (_ and not revision):
        raise ModelLoadError(
            f"{ref!r} is not a hub id: write hf:ORG/NAME or hf:ORG/NAME@REVISION "
            "(e.g. hf:FacebookAI/roberta-base, hf:EleutherAI/pythia-70m@step3000)."
        )
    return repo_id, revision or None


def offline_message(repo_id: str, revision: str | None, reason: str) -> str:
    at = f"@{revision}" if revision else ""
    rev_flag = f" --revision {revision}" if revision else ""
    return (
        f"hf:{repo_id}{at}: the Hugging Face Hub cannot be reached ({reason}) and no copy is in the local "
        f"hub cache. On a machine with internet run `hf download {repo_id}{rev_flag} --local-dir "
        f"{repo_id.split('/')[-1]}` (huggingface_hub's CLI), copy that folder here and give its path instead of "
        "the hub id: a folder works wherever a hub id does (the app's add-a-model form, --model, models add)."
    )


def cached_snapshot(repo_id: str, revision: str | None = None) -> Path | None:
    """The cached snapshot folder of a hub model, if config.json is in the cache (no network)."""
    from huggingface_hub import try_to_load_from_cache  # lazy: huggingface_hub, only for hf: models

    found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    return Path(found).parent if isinstance(found, str) else None


def download(repo_id: str, revision: str | None = None) -> Path:
    """The local snapshot folder of ``repo_id`` (downloaded when needed and possible)."""
    from huggingface_hub import snapshot_download  # lazy: huggingface_hub, only for hf: models
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=WANTED))
        if not any(folder.glob("*.safetensors")):  # an older repository: PyTorch pickles, read weights-only
            folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=WANTED + ["*.bin"]))
    except GatedRepoError:
        raise ModelLoadError(
            f"hf:{repo_id}: a gated model; accept its licence on huggingface.co and log in "
            "(`hf auth login`), or use a local copy."
        ) from None
    except RevisionNotFoundError:
        raise ModelLoadError(f"hf:{repo_id}: no revision {revision!r} on the hub.") from None
    except RepositoryNotFoundError:
        raise ModelLoadError(f"hf:{repo_id}: no such model on the hub (or it is private).") from None
    except LocalEntryNotFoundError as exc:
        from huggingface_hub import constants  # lazy: huggingface_hub, only for hf: models

        reason = "HF_HUB_OFFLINE=1 is set" if constants.HF_HUB_OFFLINE else _short(exc)
        raise ModelLoadError(offline_message(repo_id, revision, reason)) from None
    except OSError as exc:  # disk full, permissions on the cache folder
        raise ModelLoadError(f"hf:{repo_id}: cannot write the hub cache: {exc}") from None
    return folder


def _short(exc: Exception) -> str:
    text = str(exc)
    found = re.search(r"Got: ([^\n]+)", text)
    return (found.group(1) if found else "no network").strip()[:200]
