"""The machinery every transformer embedder shares: load, window, batch, run, pool (see ``models.transformer``).

Subclasses (``bert.py``, ``gpt.py``) say how to load the model, which special tokens wrap a
window, and which window a piece of a long sentence takes its vector from.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from models.base import (Embedder, ModelInfo, ModelLoadError, PieceAttention, SentenceEmbedding, check_unicode,
                         default_device)
from models.transformer.checkpoint import check_checkpoint_dir, fingerprint_files, load_tokenizer
from models.transformer.pieces import Row, make_rows, pack_batches, piece_weights, word_attention, word_pieces

POOLINGS = ("mean", "first")


class TransformerEmbedder(Embedder):
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
        check_checkpoint_dir(self.path)
        self.tokenizer = load_tokenizer(self.path)
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
        self._fp = fingerprint_files(self.path)
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

    def to(self, device: str | torch.device) -> "TransformerEmbedder":
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

    # -- tokenization and windows (models.transformer.pieces)
    def _pieces(self, sentences: list[list[str]]) -> list[tuple[list[int], np.ndarray]]:
        """Per sentence: content piece ids and the word index of each piece (every word ≥ 1 piece)."""
        return word_pieces(self.tokenizer, sentences, self._unk_id)

    def _rows(self, sentences: list[list[str]], whole_only: bool = False) -> tuple[list[Row], list[np.ndarray]]:
        """Forward-pass rows (windows) of all sentences, and each sentence's piece->word index."""
        pieces = self._pieces(sentences)
        rows = make_rows(pieces, self.window, self.stride, self._wrap, self._best_window, whole_only, self.name)
        return rows, [word_of for _, word_of in pieces]

    def _batches(self, rows: list[Row], with_attention: bool) -> list[list[int]]:
        """Row indices grouped into padding-aware batches, longest first (fail early on memory)."""
        cfg = self.model.config
        attn_cost = int(cfg.num_hidden_layers) * int(getattr(cfg, "num_attention_heads", getattr(cfg, "n_head", 1)))
        return pack_batches(rows, self.max_tokens, attn_cost if with_attention else 0)

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
        piece_weight = [piece_weights(w_of, n, self.pooling) for w_of, n in zip(piece_words, n_words)]
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
                    atts.update(word_attention(brows, att, n_words))
        vectors = acc.numpy()
        return [SentenceEmbedding(words=list(words), vectors=vectors[:, offsets[s]:offsets[s + 1]],
                                  oov=np.zeros(len(words), bool), attentions=atts.get(s))
                for s, words in enumerate(sentences)]

    def piece_attention(self, words: Sequence[str]) -> PieceAttention:
        words = [str(w) for w in words]
        if not words:
            raise ValueError("piece_attention needs at least one word.")
        check_unicode(0, words)   # the same check as Embedder.embed: no lone surrogates
        rows, _ = self._rows([words], whole_only=True)
        r = rows[0]
        with torch.inference_mode():
            _, att = self._run([r.ids], with_attention=True)
        word_ids: list[int | None] = [None] * len(r.ids)
        for p, w in zip(r.piece_pos, r.words):
            word_ids[int(p)] = int(w)
        pieces = self.tokenizer.convert_ids_to_tokens(r.ids)
        return PieceAttention(pieces=list(pieces), word_ids=word_ids, attentions=att[:, 0].float().cpu().numpy())
