"""Any local Hugging Face checkpoint as a model: choose the embedder from its config, load it, or describe it unloaded.

    emb = load_hf_checkpoint("/models/bert-base-cased", dtype="auto", layers=[0, 6, 12])
    inspect_checkpoint("/models/Llama-3.2-1B")   # {"family": "gpt", "layers": 17, "params": …} from files only

**Encoder or decoder** is read from the config, with transformers' own task mappings rather than a
list of model names: an encoder-decoder (``is_encoder_decoder``: T5, BART …) gives its encoder
(family "bert"); a config marked ``is_decoder``, or whose ``architectures`` name a causal LM
(``*ForCausalLM``, ``*LMHeadModel``), or whose ``model_type`` has a causal-LM class but no masked-LM
class (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` minus ``MODEL_FOR_MASKED_LM_MAPPING_NAMES``: GPT-2,
Llama, Qwen2 …) is a decoder (family "gpt", :class:`GptEmbedder`); everything else is an encoder
(BERT, RoBERTa, DeBERTa, ELECTRA, ALBERT, DistilBERT, XLM-R, ModernBERT: :class:`BertEmbedder`), and so is
XLNet, whose permutation LM reads both sides at inference though its class is an ``LMHeadModel``.

What is refused, and why, is in ``refusals.py``; dtype and memory in ``memory.py``. ``revision``
and ``source_label`` only describe where the files came from (``ModelInfo.source`` /
``description``); the fingerprint holds the files' content, the options and the revision, never a path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import PretrainedConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

from models.base import ModelLoadError, default_device
from models.spec import BERT, GPT
from models.transformer.bert import BertEmbedder
from models.transformer.checkpoint import load_config, load_tokenizer
from models.transformer.embedder import TransformerEmbedder
from models.transformer.gpt import GptEmbedder
from models.transformer.loading import check_tensors
from models.transformer.memory import estimate_memory, header_tensors
from models.transformer.refusals import REMOTE_CODE, check_weight_files, read_config, remote_code_reason
from models.transformer.tokens import check_vocabulary

ENCODER, DECODER, ENCODER_DECODER = "encoder", "decoder", "encoder-decoder"
FAMILY = {ENCODER: BERT.name, ENCODER_DECODER: BERT.name, DECODER: GPT.name}
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
# Trained with a language-model head yet reading both sides at inference: XLNet's permutation LM (its
# "XLNetLMHeadModel" would read as a decoder, its windows cut with left context only).
_BIDIRECTIONAL = frozenset({"xlnet"})


def architecture_role(config: PretrainedConfig | dict) -> str:
    """ "encoder", "decoder" or "encoder-decoder" for a config (object or raw config.json dict), see module doc."""
    get = config.get if isinstance(config, dict) else (lambda key, default=None: getattr(config, key, default))
    if get("is_encoder_decoder", False):
        return ENCODER_DECODER
    model_type = get("model_type")
    if model_type in _BIDIRECTIONAL:
        return ENCODER
    if get("is_decoder", False) or any(str(a).endswith(_CAUSAL_SUFFIXES) for a in get("architectures") or ()):
        return DECODER
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return DECODER
    return ENCODER


def family_of_config(path: str | Path) -> str:
    """The family ("bert" or "gpt") of the checkpoint in folder ``path``, from its config.json only."""
    return FAMILY[architecture_role(read_config(Path(path)))]


def load_hf_checkpoint(
    path: str | Path,
    name: str | None = None,
    *,
    pooling: str = "mean",
    dtype: str = "auto",
    layers: Sequence[int] | None = None,
    window: int | None = None,
    stride: int | None = None,
    device: str | torch.device | None = None,
    revision: str | None = None,
    source_label: str | None = None,
) -> TransformerEmbedder:
    """Load a local checkpoint folder as an embedder (class chosen by :func:`architecture_role`).

    Args:
        path: folder with config.json, weights (safetensors, sharded, or torch .bin) and a tokenizer.
        name: the model's name in results (default: the folder's name).
        pooling: word vector from its pieces: "mean", "first" or "last".
        dtype: "auto" (bf16/fp16 on GPU, fp32 on CPU), "fp32", "fp16" or "bf16".
        layers: keep only these hidden states (model indices, 0 = embedding output); default all.
        window, stride: content pieces per forward pass over long inputs (default the model's
            maximum) and the step between windows (default half a window).
        device: "cpu", "cuda", "cuda:N", or "auto" (accelerate spreads the model over every GPU).
        revision, source_label: where the files came from (e.g. "hf:bert-base-cased"), for the info.

    Raises:
        ModelLoadError: not a checkpoint, custom code, missing/corrupt/extra tensors, too big for memory.
        ValueError: a bad option value (pooling, layers, window, stride, dtype).
    """
    path = Path(path)
    config = read_config(path) if path.is_dir() else {}
    role = architecture_role(config)
    cls = GptEmbedder if role == DECODER else BertEmbedder
    source = source_label or str(path)
    kind = "encoder of an encoder-decoder" if role == ENCODER_DECODER else role
    description = f"{config.get('model_type', '?')} {kind} from {source}" + (
        f" (revision {revision})" if revision else ""
    )
    return cls(
        path,
        name or path.resolve().name,
        pooling=pooling,
        device=device,
        stride=stride,
        dtype=dtype,
        layers=layers,
        window=window,
        source=source,
        revision=revision,
        description=description,
    )


def _raw(config: dict, *keys: str) -> int | None:
    """A size from a raw config.json that transformers cannot read (custom code): the first key present."""
    return next((int(config[k]) for k in keys if isinstance(config.get(k), int)), None)


def inspect_checkpoint(path: str | Path) -> dict[str, Any]:
    """What a checkpoint is, from config.json and file headers only (no weights loaded): for ``models list``.

    Keys: family ("bert" | "gpt"), role, model_type, architectures, layers (incl. layer 0), dim,
    heads, params (tensor elements in the weight files: safetensors headers, torch pickles on the
    meta device), size_bytes (the weight files), needs_remote_code (then not loadable here) and its
    reason, refused (why the loader will refuse it: custom code, tokenizer, missing / extra / mis-shaped
    tensors; else None), positions (the config's maximum positions, where it has one), weights (file
    names), device, dtype and memory_bytes (:func:`~models.transformer.memory.estimate_memory` for this
    machine with dtype "auto").

    Raises:
        ModelLoadError: not a checkpoint folder, or a weight file missing / corrupt / truncated.
    """
    path = Path(path)
    if not path.is_dir():
        raise ModelLoadError(f"{path}: not a checkpoint folder.")
    raw = read_config(path)
    reason = remote_code_reason(raw)
    files = check_weight_files(path)
    facts: dict[str, Any] = {
        "model_type": raw["model_type"],
        "architectures": list(raw.get("architectures") or []),
        "role": architecture_role(raw),
        "needs_remote_code": reason is not None,
        "remote_code_reason": reason,
        "weights": [f.name for f in files],
        "size_bytes": sum(f.stat().st_size for f in files),
        "device": default_device().type,
        "dtype": "auto",
    }
    facts["family"] = FAMILY[facts["role"]]
    if reason is None:
        config = load_config(path)
        facts.update(
            layers=int(config.num_hidden_layers) + 1,
            dim=int(config.hidden_size),
            heads=getattr(config, "num_attention_heads", None),
            positions=getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None),
        )
    else:
        layers = _raw(raw, "num_hidden_layers", "n_layer", "num_layers")
        facts.update(
            layers=None if layers is None else layers + 1,
            dim=_raw(raw, "hidden_size", "n_embd", "d_model"),
            heads=_raw(raw, "num_attention_heads", "n_head", "num_heads"),
        )
    facts["params"] = header_tensors(files)[0]
    facts["memory_bytes"] = estimate_memory(path, "auto", facts["device"])
    facts["refused"] = _refusal(path, reason)
    return facts


def _refusal(path: Path, remote_code: str | None) -> str | None:
    """Why the loader will refuse this checkpoint, from files only, or None; ``models add`` / ``models list``
    report it as broken. The loader's checks in its order: custom code, the tokenizer, the weights' tensor
    names and shapes (``loading.check_tensors``: headers only), the tokenizer against the embedding matrix."""
    if remote_code is not None:
        return f"{path / 'config.json'}: this model {REMOTE_CODE}: {remote_code}."
    try:
        tokenizer = load_tokenizer(path)
        config = load_config(path)
        model = check_tensors(path, config)
        check_vocabulary(path, tokenizer, model.get_input_embeddings().num_embeddings, config)
    except ModelLoadError as exc:
        return str(exc)
    return None
