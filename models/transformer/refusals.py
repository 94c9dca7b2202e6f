"""Checkpoints this lab refuses to run, each refusal a :class:`~models.base.ModelLoadError` naming the file or tensors.

Never run with random weights, never run code shipped with a checkpoint:

- **Custom code.** A config with ``auto_map``, or a ``model_type`` this transformers version does
  not know, needs ``trust_remote_code``; this lab never enables it (nowhere is it passed as True).
- **Weight files.** The files transformers will read (``model.safetensors``, a sharded
  ``*.index.json`` and every shard it lists, or ``pytorch_model.bin``) are checked before loading:
  safetensors headers against the file size; torch pickles opened with ``torch.load(weights_only=True)``
  onto the meta device (reads the pickle, not the tensors), so a truncated zip or a pickle that needs
  code to load is refused. No weights at all is refused too.
- **Loading report.** After ``from_pretrained(output_loading_info=True)``: a tensor the kept model
  needs but the files lack (transformers would initialise it randomly), a tensor the files hold for a
  submodule of the base model that the config does not declare (e.g. more layers than
  ``num_hidden_layers``), and a shape the config and the weights disagree on are refused. Tensors
  of task heads (``cls.*``, ``lm_head.*``, a pooler the embedder does not build …) are fine. ``models add``
  and ``models list`` get the same report from the files' headers alone (``loading.check_tensors``).
- **First forward pass.** The embedder runs one tiny input once loaded: hidden states other than
  the config's L + 1 of one width ``hidden_size``, or NaN/inf in them, are refused.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import torch
from transformers import __version__ as transformers_version
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from models.assets import check_safetensors, read_json_object
from models.base import ModelLoadError

REMOTE_CODE = "needs custom code (trust_remote_code), which this lab never enables"
# What transformers reads, in its own order of preference (the first one present wins).
WEIGHT_NAMES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
MAX_NAMED = 10  # tensors named in one message


def remote_code_reason(config: dict) -> str | None:
    """Why a raw config.json needs custom modelling code, or None when transformers can build it."""
    if config.get("auto_map"):
        return f"its auto_map ({', '.join(sorted(config['auto_map']))}) points at code shipped with the checkpoint"
    model_type = config.get("model_type")
    if model_type not in CONFIG_MAPPING_NAMES:
        return f"model_type {model_type!r} is not one transformers {transformers_version} knows"
    return None


def read_config(path: Path) -> dict:
    """The raw config.json of a checkpoint folder (a JSON object with a ``model_type``)."""
    file = path / "config.json"
    if not file.is_file():
        raise ModelLoadError(f"{file}: missing (not a transformers checkpoint directory).")
    cfg = read_json_object(file, "config")
    if "model_type" not in cfg:
        raise ModelLoadError(f"{file}: no 'model_type' key; not a transformers config.")
    return cfg


def check_config(path: Path) -> dict:
    """:func:`read_config`, refusing a config that needs custom code to build."""
    cfg = read_config(path)
    reason = remote_code_reason(cfg)
    if reason is not None:
        raise ModelLoadError(f"{path / 'config.json'}: this model {REMOTE_CODE}: {reason}.")
    return cfg


def weight_files(path: Path) -> list[Path]:
    """The weight files transformers will read from ``path`` (shards resolved through their index)."""
    for name in WEIGHT_NAMES:
        file = path / name
        if not file.is_file():
            continue
        if not name.endswith(".index.json"):
            return [file]
        index = read_json_object(file, "weights index")
        shards = index.get("weight_map")
        if not isinstance(shards, dict) or not shards:
            raise ModelLoadError(f"{file}: no 'weight_map' object listing the shards.")
        files = [path / str(shard) for shard in sorted(set(shards.values()))]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise ModelLoadError(
                f"{file} lists {len(files)} shards; missing: {', '.join(missing[:MAX_NAMED])} "
                f"(an interrupted download?)."
            )
        return files
    raise ModelLoadError(f"{path}: no weights file (model.safetensors, pytorch_model.bin or a sharded *.index.json).")


def check_torch_pickle(file: Path) -> None:
    """A ``.bin``/``.pt`` torch file opens with ``weights_only=True`` (tensors only, no code) and is complete."""
    try:
        torch.load(file, map_location="meta", weights_only=True)
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise ModelLoadError(
            f"{file}: this pickle needs code to load ({first}); only plain tensors are read "
            f"(torch.load weights_only=True). Convert it to safetensors where it came from."
        ) from None
    except Exception as exc:  # noqa: BLE001 — zip/EOF/OS errors: a truncated or corrupt file
        raise ModelLoadError(f"{file}: corrupt or truncated torch file ({type(exc).__name__}: {exc}).") from None


def check_weight_files(path: Path) -> list[Path]:
    """Validate every weight file that will be read (and any other safetensors file in the folder)."""
    files = weight_files(path)
    for file in sorted(set(files) | set(path.glob("*.safetensors"))):
        if file.suffix == ".safetensors":
            check_safetensors(file)
        else:
            check_torch_pickle(file)
    return files


def _named(keys, limit: int = MAX_NAMED) -> str:
    keys = sorted(keys)
    more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def check_loading_info(path: Path, model: torch.nn.Module, kept: torch.nn.Module, info: dict) -> None:
    """Refuse what ``from_pretrained(output_loading_info=True)`` reports (module doc); ``kept`` is what runs.

    ``model`` is the module transformers built; ``kept`` the part the embedder keeps (the encoder of
    an encoder-decoder, else ``model`` itself): a missing tensor outside it (a decoder's) is fine.
    """
    kept_ids = {id(t) for t in kept.parameters()} | {id(t) for t in kept.buffers()}

    def needed(key: str) -> bool:
        for getter in (model.get_parameter, model.get_buffer):
            try:
                return id(getter(key)) in kept_ids
            except AttributeError:
                continue
        return True  # a key transformers expects but no tensor answers to: treat as needed

    missing = [k for k in info.get("missing_keys", ()) if needed(k)]
    if missing:
        raise ModelLoadError(
            f"{path}: {len(missing)} tensor(s) the model needs are missing from the weights: {_named(missing)}. "
            f"Refusing to run with randomly initialised weights (a truncated conversion, or a config that does "
            f"not match the weights?)."
        )
    mismatched = info.get("mismatched_keys", ())
    if mismatched:
        shown = sorted(mismatched)[:MAX_NAMED]
        details = ", ".join(f"{k} (weights {tuple(a)} vs config {tuple(b)})" for k, a, b in shown)
        raise ModelLoadError(
            f"{path}: config.json and the weights disagree on {len(mismatched)} tensor shape(s): "
            f"{details}{' …' if len(mismatched) > len(shown) else ''}."
        )
    own = {name for name, _ in model.named_children()}
    prefix = f"{model.base_model_prefix}." if getattr(model, "base_model_prefix", "") else ""
    extra = [k for k in info.get("unexpected_keys", ()) if k.removeprefix(prefix).split(".")[0] in own]
    if extra:
        layers = getattr(model.config, "num_hidden_layers", "?")
        raise ModelLoadError(
            f"{path}: the weights hold {len(extra)} tensor(s) of the model's own submodules that config.json "
            f"does not declare (more layers than num_hidden_layers={layers}, or another size?): {_named(extra)}."
        )


def check_probe_output(path: Path, config, hidden, attentions, dtype: torch.dtype) -> bool:
    """Refuse what a first tiny forward pass returned (module doc); True when it gave every layer's attention.

    ``hidden``/``attentions``: the outputs' ``hidden_states`` and ``attentions`` (either may be None).
    """
    expected = int(config.num_hidden_layers) + 1
    if hidden is None or len(hidden) != expected:
        raise ModelLoadError(
            f"{path}: the model returns {len(hidden or ())} hidden states; config.json "
            f"declares {expected - 1} layers (+ the embedding output)."
        )
    dims = sorted({int(h.shape[-1]) for h in hidden})
    if dims != [int(config.hidden_size)]:
        raise ModelLoadError(
            f"{path}: hidden states of sizes {dims}, config hidden_size "
            f"{config.hidden_size}: layers of different widths are not supported."
        )
    if not all(bool(torch.isfinite(h).all()) for h in hidden):
        advice = "the weights hold NaN/inf)" if dtype == torch.float32 else "overflow?); try dtype='fp32'"
        raise ModelLoadError(f"{path}: NaN/inf in the hidden states in {dtype} ({advice}.")
    return bool(attentions) and len(attentions) == expected - 1 and all(a is not None for a in attentions)
