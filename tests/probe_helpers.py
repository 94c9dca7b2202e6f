"""Test-only embedders for the probe tests (never shipped as models)."""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from models.base import Embedder, ModelInfo, SentenceEmbedding


class RandomEmbedder(Embedder):
    """Context-free random vectors: each word type gets a fixed pseudo-random vector per layer,
    and ``noise`` > 0 adds per-occurrence random noise (so identical words differ by context
    position). Calls are counted so tests can tell a cache hit from an extraction."""

    def __init__(
        self, num_layers: int = 3, dim: int = 16, version: str = "v1", noise: float = 0.0, seed: int = 0
    ) -> None:
        self.info = ModelInfo(
            name="random-test", family="static", num_layers=num_layers, dim=dim, source="tests/probe_helpers.py"
        )
        self.device = torch.device("cpu")
        self.version = version
        self.noise = noise
        self.seed = seed
        self.calls = 0
        self._rng = np.random.default_rng(seed)

    def _fingerprint_extra(self) -> str:
        return f"{self.version}-{self.noise}-{self.seed}"

    def _word_vec(self, word: str) -> np.ndarray:
        h = int.from_bytes(hashlib.sha1(f"{self.seed}:{word}".encode()).digest()[:8], "little")
        return np.random.default_rng(h).standard_normal((self.num_layers, self.dim)).astype(np.float32)

    def _embed_batch(self, sentences, with_attention):
        self.calls += 1
        out = []
        for s in sentences:
            v = np.stack([self._word_vec(w) for w in s], axis=1)  # (L, n, d)
            if self.noise:
                v = v + self.noise * self._rng.standard_normal(v.shape).astype(np.float32)
            out.append(SentenceEmbedding(words=list(s), vectors=v, oov=np.zeros(len(s), bool)))
        return out
