"""The machinery every transformer embedder shares: load, window, batch, run, pool (see ``models.transformer``).

Subclasses (``bert.py``, ``gpt.py``) say whether the model is a decoder, which extra inputs its
forward takes and which window a piece of a long sentence takes its vector from. Special tokens
and word alignment come from the tokenizer (``tokens.py``), weights through ``loading.py`` (which
refuses missing or extra tensors), memory checks from ``memory.py``, the check of a first tiny
forward pass from ``refusals.py``, word/piece bookkeeping and padding from ``pieces.py``; the feature
cache's streamed path (``embed_rows``: pooled and cast on the device, pipelined) from ``stream.py``.

Options beyond the pipeline's: ``dtype`` None keeps the built-in rule (fp32 on CPU unless
``cpu_bf16``, fp16 on CUDA unless ``half_on_cuda=False``; weights loaded in fp32, then cast); a string
("auto", "fp32", "fp16", "bf16") loads straight in that dtype after checking the weights fit in free
memory. ``layers`` keeps only those hidden states (``info.layer_ids``). ``device="auto"`` spreads the
model over every GPU with accelerate (``device_map="auto"``); inputs go to the first device.

Out of GPU memory during ``embed`` (torch's or a library's: ``models.errors.is_out_of_memory``): the token
budget is halved, one warning line logged, the remaining rows re-packed and the run goes on, with the same vectors; a
single row that does not fit raises ``torch.OutOfMemoryError`` with an estimate of what it needs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from corpora.errors import RequestError
from models.base import Embedder, ModelInfo, PieceAttention, SentenceEmbedding, check_unicode, default_device, seeded
from models.oom import run_or_oom
from models.options import CPU_TOKENS, GPU_TOKENS
from models.transformer.checkpoint import check_checkpoint_dir, fingerprint_files, load_config, load_tokenizer
from models.transformer.loading import context_size, init_kwargs, load_model, model_class, select_layers
from models.transformer.memory import check_fits, device_kind, estimate_memory, repack_after_oom, resolve_dtype
from models.transformer.pieces import (
    Row,
    check_one_window,
    make_rows,
    pack_batches,
    pad_right,
    per_word_pieces,
    piece_weights,
    word_attention,
    word_pieces,
)
from models.transformer.refusals import check_probe_output
from models.transformer.stream import stream_rows
from models.transformer.tokens import (
    alignment_problems,
    check_known_words,
    check_vocabulary,
    prepare_word_alignment,
    special_layout,
    text_sample,
)

POOLINGS = ("mean", "first", "last")
log = logging.getLogger(__name__)


class TransformerEmbedder(Embedder):
    """Shared machinery; subclasses set ``family``, ``decoder`` and the window choice."""

    has_attention = True
    computed_with = ("torch", "transformers", "tokenizers", "sentencepiece")  # slow tokenizers convert via it
    family = ""
    decoder = False

    def __init__(
        self,
        path: str | Path,
        name: str,
        pooling: str = "mean",
        device: str | torch.device | None = None,
        max_tokens: int | None = None,
        stride: int | None = None,
        max_length: int | None = None,
        half_on_cuda: bool = True,
        cpu_bf16: bool = False,
        description: str = "",
        card: dict | None = None,
        *,
        dtype: str | None = None,
        layers: Sequence[int] | None = None,
        window: int | None = None,
        source: str | None = None,
        revision: str | None = None,
    ) -> None:
        if pooling not in POOLINGS:
            raise RequestError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if max_tokens is not None and max_tokens < 1:
            raise RequestError(f"max_tokens must be >= 1, got {max_tokens}")
        if window is not None and max_length is not None:
            raise RequestError("give window (content pieces) or max_length (pieces with special tokens), not both")
        self.path = Path(path)
        check_checkpoint_dir(self.path)
        self.config = load_config(self.path)
        self.tokenizer = load_tokenizer(self.path)
        self.pooling, self.revision = pooling, revision
        self._max_tokens_arg, self.half_on_cuda, self.cpu_bf16 = max_tokens, half_on_cuda, cpu_bf16
        self._dispatched = device_kind(device) == "auto"
        self._dtype_option = "auto" if self._dispatched and dtype is None else dtype
        self._head, self._tail = special_layout(self.tokenizer, self.decoder)
        self._prefix = prepare_word_alignment(self.tokenizer)
        self.model = self._load_model(device)
        check_vocabulary(self.path, self.tokenizer, self.model.get_input_embeddings().num_embeddings, self.config)
        self.max_positions = context_size(self.config, self.model, self.tokenizer.model_max_length)
        limit = self.max_positions - self._num_specials()
        if max_length is not None and not self._num_specials() < max_length <= self.max_positions:
            raise RequestError(
                f"max_length must be in ({self._num_specials()}, {self.max_positions}], got {max_length}"
            )
        if window is not None and not 0 < window <= limit:
            raise RequestError(f"window must be in [1, {limit}] pieces for {name}, got {window}")
        # Content pieces per forward pass; max_length (pieces incl. specials) may shrink it, e.g. for tests.
        self.window = window or (max_length or self.max_positions) - self._num_specials()
        self.tokenizer.model_max_length = 10**9  # we window long inputs ourselves; silence the length warning
        if stride is None:
            stride = max(1, self.window // 2)
        if not 0 < stride <= self.window:
            raise RequestError(f"stride must be in [1, {self.window}], got {stride}")
        self.stride = stride
        self._unk_id = self._unknown_id()
        total = self._probe()
        self.layer_ids = select_layers(layers, total, name)
        self._fp = fingerprint_files(self.path, getattr(type(self.tokenizer), "vocab_files_names", {}).values())
        card = dict(card or {})
        for flag in self._alignment_flags():
            log.warning("%s: %s", self.path, flag)
            card.setdefault("word_alignment", flag)
            description = f"{description} [{flag}]".strip()
        self.info = ModelInfo(
            name=name,
            family=self.family,
            num_layers=len(self.layer_ids or range(total)),
            dim=int(self.config.hidden_size),
            source=source or str(self.path),
            description=description,
            card=card,
            layer_ids=self.layer_ids,
        )

    # -- subclass hooks
    def _best_window(self, starts: np.ndarray, n: int) -> np.ndarray:
        """For each of n pieces, the index of the window (by start) it takes its vector from."""
        raise NotImplementedError

    def _forward_kwargs(self, ids: torch.Tensor, mask: torch.Tensor) -> dict:
        return {"input_ids": ids, "attention_mask": mask}

    # -- special tokens (from the tokenizer: tokens.special_layout)
    def _num_specials(self) -> int:
        return len(self._head) + len(self._tail)

    def _wrap(self, pieces: list[int]) -> tuple[list[int], int]:
        """Add special tokens: returns (ids, offset of the first content piece)."""
        return self._head + list(pieces) + self._tail, len(self._head)

    def _unknown_id(self) -> int:
        tok = self.tokenizer
        for cand in (tok.unk_token_id, tok.eos_token_id, tok.pad_token_id):
            if cand is not None:
                return int(cand)
        return 0

    def _alignment_flags(self) -> list[str]:
        if not getattr(self.tokenizer, "is_fast", False):
            return [
                "per-word tokenization: a Python-only tokenizer has no word_ids(), so each word is tokenized "
                "on its own, out of context"
            ]
        problems = alignment_problems(self.tokenizer, self._prefix)
        return [f"pre-split words tokenize unlike running text: {'; '.join(problems[:3])}"] if problems else []

    # -- loading
    def _load_model(self, device: str | torch.device | None) -> torch.nn.Module:
        if self._dtype_option is None:  # built-in rule: fp32 weights on the CPU, then .to() casts and moves
            self.model = load_model(self.path, self.config, torch.float32)
            self.to(device or default_device())
            return self.model
        dtype = resolve_dtype(self._dtype_option, device)
        check_fits(self.path, estimate_memory(self.config, self._dtype_option, device), device, dtype)
        kind = device_kind(device)
        target = torch.device(device) if kind != "auto" and device is not None else default_device()
        device_map = "auto" if kind == "auto" else ({"": str(target)} if target.type == "cuda" else None)
        self.model = load_model(self.path, self.config, dtype, device_map)
        if self._dispatched:  # accelerate placed the layers; inputs go where the first parameters are
            self.device, self.dtype = next(self.model.parameters()).device, dtype
            self.max_tokens = self._max_tokens_arg or (GPU_TOKENS if self.device.type == "cuda" else CPU_TOKENS)
        else:
            self.to(target)
        return self.model

    def _probe(self) -> int:
        """One tiny forward pass: hidden states as the config says, finite, attention or not. Returns L+1."""
        ids, _ = self._wrap([self._unk_id] * 2)
        with torch.inference_mode():
            out = self.model(
                **self._forward_kwargs(*self._inputs([ids])),
                output_hidden_states=True,
                output_attentions=True,
                return_dict=True,
            )
        self.has_attention = check_probe_output(self.path, self.config, out.hidden_states, out.attentions, self.dtype)
        return int(self.config.num_hidden_layers) + 1

    def to(self, device: str | torch.device) -> TransformerEmbedder:
        if self._dispatched:
            raise ValueError(f"{self.path} is spread over several devices (device='auto'); it cannot be moved.")
        self.device = torch.device(device)
        if self._dtype_option is not None:
            self.dtype = resolve_dtype(self._dtype_option, self.device)
        # Built-in rule: fp16 on CUDA. On CPU fp32 by default (fp16 matmuls are slow there); bf16 only when asked
        # for: on CPUs with AMX/AVX512-BF16 MiniLM runs ~2x faster (docs/benchmarks.md), cosine to fp32 > 0.999.
        elif self.device.type == "cuda":
            self.dtype = torch.float16 if self.half_on_cuda else torch.float32
        else:
            self.dtype = torch.bfloat16 if self.cpu_bf16 else torch.float32
        self.max_tokens = self._max_tokens_arg or (GPU_TOKENS if self.device.type == "cuda" else CPU_TOKENS)
        self.model.to(device=self.device, dtype=self.dtype)
        return self

    def _redraw_weights(self, seed: int) -> None:
        # The base model class built as before pre-training, its state copied in (models.random_init).
        config = self.config
        cls = model_class(config)
        with seeded(seed):
            fresh = cls._from_config(config, attn_implementation="eager", **init_kwargs(cls))
        kept = fresh.get_encoder() if getattr(config, "is_encoder_decoder", False) else fresh
        self.model.load_state_dict(kept.state_dict())

    def _fingerprint_extra(self) -> str:
        extra = f"{self._fp}|pool={self.pooling}|{self.dtype}|win={self.window}/{self.stride}"
        if self.layer_ids is not None:
            extra += f"|layers={','.join(map(str, self.layer_ids))}"
        return extra + (f"|rev={self.revision}" if self.revision else "")

    # -- tokenization and windows (models.transformer.pieces)
    def _pieces(self, sentences: list[list[str]], check: bool = True) -> list[tuple[list[int], np.ndarray]]:
        """Per sentence: content piece ids and the word index of each piece (every word ≥ 1 piece). ``check``: refuse
        text that is mostly the unknown token (``check_known_words``); the feature path checked its whole dataset
        first (:meth:`check_text`), so its chunks are not judged one by one."""
        if not getattr(self.tokenizer, "is_fast", False):
            pieces = per_word_pieces(self.tokenizer, sentences, self._unk_id)
        else:
            pieces = word_pieces(self.tokenizer, sentences, self._unk_id, self._prefix)
        if check:
            check_known_words(self.path, self.tokenizer, pieces)
        return pieces

    def check_text(self, sentences: Sequence[Sequence[str]]) -> None:
        """Refuse a dataset that is mostly the unknown token, judged on a seeded random sample of its sentences
        (``tokens.text_sample``), never per chunk: a length-sorted extraction's last chunk holds its shortest lines
        (emoji, names), which a vocabulary may rightly not read, and a verdict must not hang on how chunks fall."""
        sentences = list(sentences)
        sample = [self._checked_sentence(n, sentences[n]) for n in text_sample(sentences)]  # names its own sentence
        check_known_words(self.path, self.tokenizer, self._pieces(sample, check=False), what="the text to embed")

    def _rows(
        self, sentences: list[list[str]], whole_only: bool = False, check: bool = True
    ) -> tuple[list[Row], list[np.ndarray]]:
        """Forward-pass rows (windows) of all sentences, and each sentence's piece->word index; ``whole_only``
        (attention): a sentence longer than one window is refused (``pieces.check_one_window``)."""
        pieces = self._pieces(sentences, check)
        if whole_only:
            check_one_window(sentences, pieces, self.window, self.name)
        rows = make_rows(pieces, self.window, self.stride, self._wrap, self._best_window)
        return rows, [word_of for _, word_of in pieces]

    def _batches(self, rows: list[Row], with_attention: bool) -> list[list[int]]:
        """Row indices grouped into padding-aware batches, longest first (fail early on memory)."""
        cfg = self.config
        attn_cost = int(cfg.num_hidden_layers) * int(getattr(cfg, "num_attention_heads", getattr(cfg, "n_head", 1)))
        return pack_batches(rows, self.max_tokens, attn_cost if with_attention else 0)

    # -- forward
    def _inputs(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ids and attention mask on the input device."""
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        arr, mask = pad_right(ids, pad)
        t_ids, t_mask = torch.from_numpy(arr), torch.from_numpy(mask)
        if self.device.type == "cuda":
            t_ids = t_ids.pin_memory().to(self.device, non_blocking=True)
            t_mask = t_mask.pin_memory().to(self.device, non_blocking=True)
        return t_ids, t_mask

    def _run(self, ids: list[list[int]], with_attention: bool):
        return self._run_tensors(*self._inputs(ids), with_attention)

    def _run_tensors(self, ids: torch.Tensor, mask: torch.Tensor, with_attention: bool):
        """Run padded (B, T) ids: (L+1 hidden states (B, T, D), attentions (L, B, H, T, T) or None)."""
        out = self.model(
            **self._forward_kwargs(ids, mask),
            output_hidden_states=True,
            output_attentions=with_attention,
            return_dict=True,
        )
        if not with_attention:
            return out.hidden_states, None
        return out.hidden_states, torch.stack([a.to(self.device) for a in out.attentions])

    def _word_parts(
        self, brows: list[Row], piece_weight: list[np.ndarray], n_words: np.ndarray, with_attention: bool
    ) -> tuple[list[torch.Tensor], dict[int, np.ndarray]]:
        """One batch: per kept layer the weighted vectors of the pieces that supply words (CPU); attention."""
        hidden, att = self._run([r.ids for r in brows], with_attention)
        T = hidden[0].shape[1]
        # Every selected piece: its flat (row, position) in the batch and its pooling weight.
        src = torch.from_numpy(np.concatenate([b * T + r.piece_pos[r.sel] for b, r in enumerate(brows)]))
        weight = np.concatenate([piece_weight[r.sentence][r.start + np.flatnonzero(r.sel)] for r in brows])
        weight_t = torch.from_numpy(weight.astype(np.float32))[:, None]
        layers = hidden if self.layer_ids is None else [hidden[i] for i in self.layer_ids]
        parts = [
            (h.reshape(-1, self.dim).index_select(0, src.to(h.device)).float() * weight_t.to(h.device)).cpu()
            for h in layers
        ]  # per layer: no (L+1, B, T, D) stack copy
        return parts, (word_attention(brows, att, n_words) if att is not None else {})

    def _embed_batch(self, sentences: list[list[str]], with_attention: bool) -> list[SentenceEmbedding]:
        rows, piece_words = self._rows(sentences, whole_only=with_attention)
        n_words = np.array([len(s) for s in sentences])
        offsets = np.concatenate([[0], np.cumsum(n_words)])
        # (layers, total_words, D): a sentence's vectors are one slice, each layer's rows contiguous.
        acc = torch.zeros(self.num_layers, int(offsets[-1]), self.dim, dtype=torch.float32)
        # Pooling weight of each piece: 1/n (mean) or 1 for the word's first / last piece.
        piece_weight = [piece_weights(w_of, n, self.pooling) for w_of, n in zip(piece_words, n_words)]
        atts: dict[int, np.ndarray] = {}
        todo = self._batches(rows, with_attention)
        with torch.inference_mode():
            while todo:
                brows = [rows[i] for i in todo[0]]
                out, oom = run_or_oom(self._word_parts, brows, piece_weight, n_words, with_attention)
                if oom is not None:  # nothing of this batch was added yet: re-run it smaller
                    todo = repack_after_oom(self, oom, rows, todo, with_attention)
                    continue
                parts, batch_atts = out
                todo.pop(0)
                # Each selected piece goes to its word's global slot (windowed words draw from two windows).
                dst = torch.from_numpy(np.concatenate([offsets[r.sentence] + r.words[r.sel] for r in brows]))
                for layer, part in enumerate(parts):
                    acc[layer].index_add_(0, dst, part)
                atts.update(batch_atts)
        vectors = acc.numpy()
        return [
            SentenceEmbedding(
                words=list(words),
                vectors=vectors[:, offsets[s] : offsets[s + 1]],
                oov=np.zeros(len(words), bool),
                attentions=atts.get(s),
            )
            for s, words in enumerate(sentences)
        ]

    def embed_rows(self, chunks, dtype: torch.dtype):  # the feature cache's path: stream.py
        return stream_rows(self, chunks, dtype)

    def piece_attention(self, words: Sequence[str]) -> PieceAttention:
        if not self.has_attention:
            raise ValueError(f"{self.name} has no attention.")
        words = [str(w) for w in words]
        if not words:
            raise ValueError("piece_attention needs at least one word.")
        check_unicode(0, words)  # the same check as Embedder.embed: no lone surrogates
        rows, _ = self._rows([words], whole_only=True)
        r = rows[0]
        with torch.inference_mode():
            _, att = self._run([r.ids], with_attention=True)
        word_ids: list[int | None] = [None] * len(r.ids)
        for p, w in zip(r.piece_pos, r.words):
            word_ids[int(p)] = int(w)
        pieces = self.tokenizer.convert_ids_to_tokens(r.ids)
        return PieceAttention(pieces=list(pieces), word_ids=word_ids, attentions=att[:, 0].float().cpu().numpy())
