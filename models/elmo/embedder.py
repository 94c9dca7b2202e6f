"""ELMo behind the common :class:`~models.base.Embedder` interface.

    emb = load_embedder("elmo-small")             # assets/elmo-small (trained here)
    emb = load_elmo_hdf5("options.json", "weights.hdf5")   # original AllenNLP/bilm-tf weights
    out = emb.embed([["The", "bank", "closed", "."]])
    out[0].vectors.shape                          # (L+1, 4, 2D); layer 0 = char-CNN output [x; x]

Batched extraction: sentences are sorted by length and packed so that sentences × (longest + 2)
stays within ``max_tokens``; each batch runs once under ``torch.inference_mode`` (fp16 on CUDA
only, pinned host memory for the transfer). Every sequence starts from zero LSTM states and its
padding sits after it, so a sentence gets the same vectors whatever it is batched with.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from models.assets import ASSETS, read_model_card
from models.base import Embedder, ModelInfo, ModelLoadError, SentenceEmbedding, default_device
from models.elmo.bilm import ElmoBiLm
from models.elmo.characters import ElmoCharacterMapper
from models.elmo.checkpoint import load_bilm
from models.registry import train_command


class ElmoEmbedder(Embedder):
    """Per-word vectors of every biLM layer: (L+1, num_words, 2D) float32, no attention."""

    has_attention = False

    def __init__(
        self,
        bilm: ElmoBiLm,
        name: str,
        source: str,
        device: str | torch.device | None = None,
        max_tokens: int = 4096,
        half_on_cuda: bool = True,
        description: str = "",
        card: dict | None = None,
        fingerprint_extra: str = "",
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.bilm = bilm.eval()
        self.max_tokens = max_tokens
        self.half_on_cuda = half_on_cuda
        self._fp_extra = fingerprint_extra
        self._char_cache: dict[str, list[int]] = {}
        self.info = ModelInfo(name=name, family="elmo", num_layers=bilm.num_layers, dim=2 * bilm.projection_dim,
                              source=source, description=description, card=card or {})
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.to(device or default_device())

    def to(self, device: str | torch.device) -> "ElmoEmbedder":
        self.device = torch.device(device)
        self.dtype = torch.float16 if (self.device.type == "cuda" and self.half_on_cuda) else torch.float32
        self.bilm.to(self.device, dtype=self.dtype)
        return self

    def _fingerprint_extra(self) -> str:
        return self._fp_extra

    def _char_ids(self, word: str) -> list[int]:
        ids = self._char_cache.get(word)
        if ids is None:
            ids = ElmoCharacterMapper.convert_word_to_char_ids(word)
            if len(self._char_cache) < 500_000:
                self._char_cache[word] = ids
        return ids

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Sentence indices sorted by length, packed so len(batch) × (longest + 2) ≤ max_tokens."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            longest = lengths[i] + 2  # sorted: the newest sentence is the longest
            if cur and longest * (len(cur) + 1) > self.max_tokens:
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
        return out

    def _encode(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        t = max(len(s) for s in sentences)
        ids = np.zeros((len(sentences), t, ElmoCharacterMapper.max_word_length), dtype=np.int64)
        for b, s in enumerate(sentences):
            if s:
                ids[b, : len(s)] = [self._char_ids(w) for w in s]
        tensor = torch.from_numpy(ids)
        if self.device.type == "cuda":
            tensor = tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor

    def layers(self, sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """One forward pass: (L+1, B, T, 2D) float32 on CPU and mask (B, T), no reordering."""
        with torch.inference_mode():
            layers, mask = self.bilm.layers(self._encode(sentences))
        return layers.float().cpu(), mask.cpu()

    def _embed_batch(self, sentences: list[list[str]], with_attention: bool) -> list[SentenceEmbedding]:
        results: list[SentenceEmbedding | None] = [None] * len(sentences)
        with torch.inference_mode():
            for batch in self.batches([len(s) for s in sentences]):
                layers, _ = self.bilm.layers(self._encode([sentences[i] for i in batch]))
                layers = layers.float().cpu().numpy()  # (L+1, B, T, 2D)
                for b, i in enumerate(batch):
                    n = len(sentences[i])
                    results[i] = SentenceEmbedding(
                        words=list(sentences[i]),
                        vectors=np.ascontiguousarray(layers[:, b, :n]),
                        oov=np.zeros(n, bool),
                    )
        return results  # type: ignore[return-value]


def _file_fingerprint(paths: Sequence[Path]) -> str:
    h = hashlib.sha1()
    for p in paths:
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def load_elmo_asset(name: str = "elmo-small", device: str | torch.device | None = None,
                    assets_dir: str | Path | None = None, **kwargs) -> ElmoEmbedder:
    """Our own checkpoint in ``assets/<name>/`` (options.json + model.safetensors + model_card.json)."""
    path = Path(assets_dir) / name if assets_dir else ASSETS / name
    command = train_command(name) or f"python -m models train elmo --name {name}"
    if not (path / "options.json").is_file() or not (path / "model.safetensors").is_file():
        raise ModelLoadError(
            f"ELMo asset '{name}' not found in {path} (needs options.json and model.safetensors). "
            f"Train it with: {command}"
        )
    bilm = load_bilm(path)
    card = read_model_card(path) or {}
    desc = "ELMo biLM (char-CNN + 2-layer LSTMP) trained here on the LM corpus"
    return ElmoEmbedder(bilm, name=name, source=str(path), device=device, card=card, description=desc,
                        fingerprint_extra=_file_fingerprint([path / "options.json", path / "model.safetensors"]),
                        **kwargs)


def load_elmo_hdf5(options_path: str | Path, weights_path: str | Path, name: str = "elmo-hdf5",
                   device: str | torch.device | None = None, **kwargs) -> ElmoEmbedder:
    """Original AllenNLP / bilm-tf weights (``options.json`` + ``weights.hdf5``)."""
    # Imported here: h5py is only needed for original weights, not for the default ELMo asset.
    from models.elmo.hdf5_io import load_bilm_from_hdf5

    bilm = load_bilm_from_hdf5(options_path, weights_path)
    return ElmoEmbedder(bilm, name=name, source=str(weights_path), device=device,
                        description="ELMo from original options.json + weights.hdf5",
                        fingerprint_extra=_file_fingerprint([Path(options_path), Path(weights_path)]), **kwargs)
