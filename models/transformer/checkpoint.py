"""A local transformers checkpoint folder: validated before loading, its config, its tokenizer, its fingerprint.

Validation fails early with :class:`~models.base.ModelLoadError` naming the file and the reason
(missing folder or config.json, a config that is not a JSON object, has no ``model_type`` or needs
custom code, no weights, a truncated or corrupt weight file or shard: ``models.transformer.refusals``)
instead of letting transformers raise deep inside.

The tokenizer is the fast (``tokenizers``) one wherever transformers has or can build it; a
tokenizer that exists only in Python (no tokenizer.json, not convertible, e.g. ByT5's) is returned
too, and the embedder falls back to tokenizing each word on its own (``models.transformer.tokens``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from transformers import AutoConfig, AutoTokenizer, PretrainedConfig, PreTrainedTokenizerBase

from corpora.digests import content_fingerprint
from models.base import ModelLoadError
from models.transformer.refusals import check_config, check_weight_files


def check_checkpoint_dir(path: Path) -> None:
    """Fail early, naming the file and the reason, instead of letting transformers raise deep inside."""
    if not path.exists():
        raise ModelLoadError(f"Model directory {path} does not exist.")
    if not path.is_dir():
        raise ModelLoadError(f"{path} is not a directory (expected a checkpoint folder with config.json).")
    check_config(path)
    check_weight_files(path)


def load_config(path: Path) -> PretrainedConfig:
    """The checkpoint's transformers config (never with custom code: ``check_config`` ran first)."""
    try:
        return AutoConfig.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # a config transformers rejects (bad values for its class)
        raise ModelLoadError(
            f"{path / 'config.json'}: transformers cannot read it ({type(exc).__name__}: {exc})."
        ) from exc


def load_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    """The fast tokenizer where there is one; else the Python one (``is_fast`` False: per-word fallback).

    ``split_special_tokens``: a word of the text that is literally ``[SEP]`` or ``<|endoftext|>`` is text,
    tokenized like any other, never the control token (the special tokens a window needs are added by
    id, ``tokens.special_layout``)."""
    try:
        return AutoTokenizer.from_pretrained(
            str(path), use_fast=True, local_files_only=True, trust_remote_code=False, split_special_tokens=True
        )
    except Exception as exc:  # transformers raises OSError/ValueError/JSON errors depending on the file
        files = ", ".join(sorted(p.name for p in path.glob("*token*"))) or "none"
        raise ModelLoadError(f"{path}: cannot load the tokenizer (tokenizer files: {files}): {exc}") from exc


# Files that decide what a checkpoint computes, besides its weights (tokenizer files of every family; the loaded
# tokenizer's own ``vocab_files_names`` are added by the embedder).
CONTENT_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
)
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt")


def fingerprint_files(path: Path, tokenizer_files: Iterable[str] = ()) -> str:
    """Content fingerprint of a checkpoint folder: config, tokenizer (``CONTENT_FILES`` and ``tokenizer_files``, the
    names its tokenizer class reads: a DeBERTa-v2's ``spm.model``) and every weight file's bytes."""
    files = [path / n for n in (*CONTENT_FILES, *tokenizer_files) if (path / n).is_file()]
    files += [f for pattern in WEIGHT_PATTERNS for f in path.glob(pattern) if f.is_file()]
    return content_fingerprint(files, root=path)
