"""Per-head query and key vectors of one sentence, read from the model's own forward pass: bertviz's neuron view.

    qk = query_key_vectors(load_embedder("minilm"), ["The", "bank", "closed", "."])
    qk.queries.shape                 # (layers, heads, pieces, head_dim): the model's pieces, specials included
    qk.scores(2, 5)                  # (pieces, pieces): q·k × scale (+ −inf above the diagonal of a decoder)
    qk.max_error()                   # max |softmax(scores) − the model's attention|: ~1e-5 in fp32

Design notes:

- **Pieces, not words.** q·k is defined between the model's own pieces; a word's attention row is pooled
  from several of them (``pieces.word_attention``: sum over key pieces, mean over query pieces), which no
  pooling of q and k vectors reproduces. So the vectors are per piece, ``pieces`` / ``word_ids`` say which
  word each belongs to (None: a special token), and the app maps its word choice to the word's first piece.
- **Hooks, not a re-implementation.** Forward hooks on each attention module's query and key projections
  (BERT-style ``query``/``key``, DistilBERT ``q_lin``/``k_lin``, GPT-2's fused ``c_attn`` split in three,
  ``q_proj``/``k_proj``) record their outputs during one ordinary forward pass; the scale is the module's
  own ``scaling`` (GPT-2's includes ``scale_attn_by_inverse_layer_idx``, OPT's is applied after ``q_proj``).
  A hook records only in the calling thread: the app shares one model between sessions.
- **Checked, not assumed.** Where a model transforms q and k after the projection (rotary positions: Llama,
  Qwen2, GPT-NeoX) or adds position terms to the scores (DeBERTa), softmax(q·k × scale) is not its
  attention. :meth:`QueryKey.max_error` measures the difference on every head and ``query_key_vectors`` refuses the
  model with a clear message when they differ, so the neuron view never shows vectors that do not explain
  the attention on screen.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from corpora.errors import RequestError
from models.base import Embedder, check_unicode

#: Largest |softmax(q·k × scale) − attention| accepted (fp16 on a GPU reaches ~1e-3; fp32 ~1e-6).
TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}


class QueryKeyError(RequestError):
    """The model's attention is not softmax(q·k × scale) of projections the hooks can read: a limit of the model
    (rotary or relative positions, shared keys, no heads), not a fault — callers show it as such."""


@dataclass
class QueryKey:
    """Query and key vectors of one sentence, per layer, head and piece (float32).

    queries, keys: (layers, heads, pieces, head_dim); scale: (layers,) the factor q·k is multiplied by
    before the softmax (1/√head_dim for BERT and GPT-2); causal: a decoder (a piece sees only itself and
    the pieces before it); attentions: (layers, heads, pieces, pieces), the model's own returned attention.
    """

    pieces: list[str]
    word_ids: list[int | None]
    queries: np.ndarray
    keys: np.ndarray
    scale: np.ndarray
    causal: bool
    attentions: np.ndarray

    def scores(self, layer: int, head: int) -> np.ndarray:
        """(pieces, pieces) pre-softmax scores q·k × scale of a head (0-based), −inf where masked."""
        q, k = self.queries[layer, head].astype(np.float64), self.keys[layer, head].astype(np.float64)
        s = q @ k.T * float(self.scale[layer])
        if self.causal:
            s[np.triu_indices(len(s), 1)] = -np.inf
        return s

    def softmax(self, layer: int, head: int) -> np.ndarray:
        """The attention these vectors give: softmax over the keys of :meth:`scores`."""
        s = self.scores(layer, head)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def max_error(self) -> float:
        """The largest |softmax(q·k × scale + mask) − the model's attention| over every layer and head."""
        L, H = self.queries.shape[:2]
        return max(
            (float(np.abs(self.softmax(li, h) - self.attentions[li, h]).max()) for li in range(L) for h in range(H)),
            default=0.0,
        )

    def first_piece(self, word: int) -> int:
        """The index of word ``word``'s first piece (0-based word index)."""
        for i, w in enumerate(self.word_ids):
            if w == word:
                return i
        raise IndexError(f"Word {word + 1} has no piece in this sentence.")


def _projections(module: torch.nn.Module) -> tuple[str, torch.nn.Module, torch.nn.Module | None] | None:
    """(kind, query projection, key projection or None when fused) of an attention module, else None."""
    for q_name, k_name in (("query", "key"), ("q_lin", "k_lin"), ("q_proj", "k_proj")):
        q, k = getattr(module, q_name, None), getattr(module, k_name, None)
        if isinstance(q, torch.nn.Linear) and isinstance(k, torch.nn.Linear):
            return q_name, q, k
    if hasattr(module, "c_attn") and hasattr(module, "split_size") and not getattr(module, "is_cross_attention", False):
        return "c_attn", module.c_attn, None
    return None


def attention_modules(model: torch.nn.Module) -> list[tuple[torch.nn.Module, tuple]]:
    """Every self-attention module of ``model`` with its projections, in layer order."""
    return [(m, p) for _, m in model.named_modules() if (p := _projections(m)) is not None]


def position_terms(config) -> str | None:
    """What the config says the model adds to q·k or does to q and k after projecting them, or None."""
    for name in ("rope_theta", "rope_parameters", "rope_scaling", "rotary_dim", "rotary_pct"):
        if getattr(config, name, None) is not None:
            return "rotary position embeddings"
    kind = getattr(config, "position_embedding_type", None)
    if kind not in (None, "absolute"):
        return f"relative positions ({kind})"
    if getattr(config, "relative_attention", False) or getattr(config, "alibi", False):
        return "relative positions"
    return None


def _heads(model: torch.nn.Module, module: torch.nn.Module, width: int) -> tuple[int, int]:
    """(heads, head_dim) of an attention module whose query projection is ``width`` wide."""
    config = model.config
    heads = next(
        (int(v) for name in ("num_attention_heads", "num_heads", "n_heads") if (v := getattr(module, name, None))),
        int(config.num_attention_heads),
    )
    return heads, width // heads


def query_key_vectors(emb: Embedder, words: Sequence[str]) -> QueryKey:
    """The per-head query and key vectors of ``words`` (one forward pass, no windows), checked against
    the model's own attention. Raises QueryKeyError where the model's attention is not softmax(q·k × scale)."""
    model = getattr(emb, "model", None)
    if not emb.has_attention or model is None:
        raise QueryKeyError(f"{emb.name} has no attention heads.")
    words = [str(w) for w in words]
    if not words:
        raise ValueError("The neuron view needs at least one word.")
    check_unicode(0, words)
    if extra := position_terms(model.config):
        raise QueryKeyError(
            f"{emb.name} uses {extra}: its attention is not softmax(q·k/√d) of the projected queries and keys. "
            "The neuron view supports BERT-style encoders and GPT-2-style decoders."
        )
    found = attention_modules(model)
    layers = int(model.config.num_hidden_layers)
    if len(found) != layers:
        raise QueryKeyError(
            f"{emb.name}: found {len(found)} attention modules with readable query/key projections for "
            f"{layers} layers; the neuron view supports BERT-style encoders and GPT-2-style decoders."
        )
    caller = threading.get_ident()
    seen: dict[int, list[torch.Tensor]] = {}  # layer -> [q (1, T, H·d), k]

    def recorder(layer: int, part: str):
        def hook(_module, _inputs, output) -> None:
            if threading.get_ident() != caller:  # another session's forward pass on the shared model
                return
            out = output[0] if isinstance(output, tuple) else output
            if part == "c_attn":  # GPT-2: q, k, v side by side
                width = found[layer][0].split_size
                seen[layer] = [out[..., :width].detach(), out[..., width : 2 * width].detach()]
            else:
                seen.setdefault(layer, [None, None])[0 if part == "q" else 1] = out.detach()

        return hook

    handles = []
    for layer, (_, (kind, q_proj, k_proj)) in enumerate(found):
        if kind == "c_attn":
            handles.append(q_proj.register_forward_hook(recorder(layer, "c_attn")))
        else:
            handles.append(q_proj.register_forward_hook(recorder(layer, "q")))
            handles.append(k_proj.register_forward_hook(recorder(layer, "k")))
    try:
        rows, _ = emb._rows([words], whole_only=True)
        row = rows[0]
        with torch.inference_mode():
            _, att = emb._run([row.ids], with_attention=True)
    finally:
        for h in handles:
            h.remove()
    queries, keys, scales = [], [], []
    for layer, (module, _) in enumerate(found):
        q, k = seen[layer]
        heads, dim = _heads(model, module, q.shape[-1])
        if k.shape[-1] != q.shape[-1]:
            raise QueryKeyError(f"{emb.name}: keys are shared between query heads (grouped-query attention).")
        queries.append(q[0].float().reshape(q.shape[1], heads, dim).transpose(0, 1).cpu().numpy())
        keys.append(k[0].float().reshape(k.shape[1], heads, dim).transpose(0, 1).cpu().numpy())
        scales.append(float(getattr(module, "scaling", dim**-0.5)))
    word_ids: list[int | None] = [None] * len(row.ids)
    for p, w in zip(row.piece_pos, row.words):
        word_ids[int(p)] = int(w)
    qk = QueryKey(
        pieces=list(emb.tokenizer.convert_ids_to_tokens(row.ids)),
        word_ids=word_ids,
        queries=np.stack(queries),
        keys=np.stack(keys),
        scale=np.asarray(scales, np.float64),
        causal=bool(getattr(emb, "decoder", False)),
        attentions=att[:, 0].float().cpu().numpy(),
    )
    error, tolerance = qk.max_error(), TOLERANCE.get(getattr(emb, "dtype", torch.float32), 1e-4)
    if not error <= tolerance:
        raise QueryKeyError(
            f"{emb.name}: softmax(q·k/√d) of its projected queries and keys differs from its attention by "
            f"{error:.2g} (more than {tolerance:g}); its attention adds something to q·k (rotary or relative "
            "positions). The neuron view supports BERT-style encoders and GPT-2-style decoders."
        )
    return qk
