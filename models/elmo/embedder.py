"""ELMo behind the common :class:`~models.base.Embedder` interface.

    emb = load_embedder("elmo-small")             # assets/elmo-small (trained here)
    emb = load_allennlp_elmo("options.json", "weights.hdf5")   # the original AllenNLP/bilm-tf files
    out = emb.embed([["The", "bank", "closed", "."]])
    out[0].vectors.shape                          # (L+1, 4, 2D); layer 0 = char-CNN output [x; x]

Batched extraction: sentences are sorted by length and packed so that sentences × (longest + 2)
stays within ``max_tokens``; each batch runs once under ``torch.inference_mode`` (fp16 on CUDA
only, pinned host memory for the transfer). Every sequence starts from zero LSTM states and its
padding sits after it, so a sentence gets the same vectors whatever it is batched with. Out of GPU memory
(``models.errors.is_out_of_memory``): the token budget is halved, one warning logged and the sentences not yet
run re-packed, as the transformer embedder does; a lone sentence (or a stateful call) that does not fit is an error
saying so.

``stateful=True`` runs the original's way instead (``models.elmo.lstm``): each ``embed`` call is
ONE batch in the given order, row i continuing from the LSTM states row i ended with in the
previous call, so vectors depend on what was embedded before (until ``reset_states()``).

The original files as a user model: ``find_allennlp_files(folder)`` finds the pair (published
names like ``elmo_2x4096_512_2048cnn_2xhighway_options.json`` / ``…_weights.hdf5``, or plain
``options.json`` / ``weights.hdf5``), ``inspect_allennlp_elmo`` gives its shape and size from the
hdf5 metadata (``python -m models list``), ``load_allennlp_elmo`` loads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from corpora.digests import content_fingerprint, file_digests
from models.assets import ASSETS, read_model_card, require_card
from models.base import Embedder, ModelInfo, ModelLoadError, SentenceEmbedding, default_device, seeded
from models.elmo.bilm import ElmoBiLm
from models.elmo.characters import batch_to_ids
from models.elmo.checkpoint import load_bilm
from models.oom import halve_budget, run_or_oom
from models.spec import ELMO


class ElmoEmbedder(Embedder):
    """Per-word vectors of every biLM layer: (L+1, num_words, 2D) float32, no attention.

    ``stateful`` (default False) switches the biLM to the original's carried LSTM states (see
    ``embed``); ``reset_states()`` restarts from zero states.
    """

    has_attention = False
    computed_with = ("torch",)

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
        stateful: bool = False,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.bilm = bilm.eval()
        self.bilm.stateful = stateful  # also starts from zero states
        self.max_tokens = max_tokens
        self.half_on_cuda = half_on_cuda
        self._fp_extra = fingerprint_extra
        self.info = ModelInfo(
            name=name,
            family=ELMO.name,
            num_layers=bilm.num_layers,
            dim=2 * bilm.projection_dim,
            source=source,
            description=description,
            card=card or {},
        )
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.to(device or default_device())

    def to(self, device: str | torch.device) -> ElmoEmbedder:
        self.device = torch.device(device)
        self.dtype = torch.float16 if (self.device.type == "cuda" and self.half_on_cuda) else torch.float32
        self.bilm.to(self.device, dtype=self.dtype)
        return self

    @property
    def stateful(self) -> bool:
        return self.bilm.stateful

    def reset_states(self) -> None:
        """Stateful mode: the next ``embed`` starts from zero LSTM states (a fresh model)."""
        self.bilm.reset_states()

    def _redraw_weights(self, seed: int) -> None:
        # A fresh biLM from the same options, as training starts from (models.random_init).
        with seeded(seed):
            fresh = ElmoBiLm(self.bilm.options)
        self.bilm.load_state_dict(fresh.state_dict())
        self.bilm.reset_states()

    def _fingerprint_extra(self) -> str:
        # Stateful vectors depend on the call history: never share cache entries with stateless ones. Half precision
        # on a GPU (``half_on_cuda``) gives other vectors (±3e-3): its own entries; float32 keeps the key it had.
        half = "" if self.dtype == torch.float32 else f"|{self.dtype}"
        return self._fp_extra + ("|stateful" if self.stateful else "") + half

    def embed(self, sentences: Sequence[Sequence[str]], with_attention: bool = False) -> list[SentenceEmbedding]:
        """See :meth:`Embedder.embed`. Stateless (default): any batching, vectors independent of it.

        Stateful: the sentences run as ONE batch in the given order (no length sorting, no
        ``max_tokens`` split): sentence i is batch row i and starts from the (h, c) states row i ended
        with in the previous call, both directions, every layer, as bilm-tf / AllenNLP ran the
        original. An empty sentence is refused there (ValueError): it would shift the rows.
        """
        empty = next((i for i, s in enumerate(sentences) if len(s) == 0), None) if self.stateful else None
        if empty is not None:
            raise ValueError(
                f"{self.name} is stateful: batch row i continues row i of the previous call, so no "
                f"sentence may be empty (sentence {empty + 1} is). Drop it, or use stateless mode."
            )
        return super().embed(sentences, with_attention)

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Sentence indices sorted by length, packed so len(batch) × (longest + 2) ≤ max_tokens."""
        return pack_by_length(lengths, self.max_tokens)

    def _encode(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        tensor = batch_to_ids(sentences)
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
        # Stateful: one batch, rows in the given order (row i's carried state belongs to sentence i).
        todo = [list(range(len(sentences)))] if self.stateful else self.batches([len(s) for s in sentences])
        with torch.inference_mode():
            while todo:
                batch = todo[0]
                out, oom = run_or_oom(self.layers, [sentences[i] for i in batch])
                if oom is not None:
                    todo = self._repack_after_oom(oom, sentences, todo)
                    continue
                todo.pop(0)
                layers = out[0].numpy()  # (L+1, B, T, 2D), float32 on the CPU (``layers``)
                for b, i in enumerate(batch):
                    n = len(sentences[i])
                    results[i] = SentenceEmbedding(
                        words=list(sentences[i]), vectors=np.ascontiguousarray(layers[:, b, :n]), oov=np.zeros(n, bool)
                    )
        return results  # type: ignore[return-value]

    def _repack_after_oom(
        self, exc: BaseException, sentences: list[list[str]], todo: list[list[int]]
    ) -> list[list[int]]:
        """The batches ``todo`` (the first failed) after an out-of-memory error: the token budget halved and the
        sentences not yet run re-packed (stateless vectors do not depend on the batching); a lone sentence, or a
        stateful call (one batch by design), that does not fit is an error saying what to do."""
        failed = todo[0]
        what = f"one sentence of {len(sentences[failed[0]])} words" if len(failed) == 1 else None
        what = "a stateful call's one batch" if self.stateful else what
        lone = what and (
            f"{self.name}: {what} does not fit in {self.device} memory; embed fewer or shorter sentences at a "
            "time, or run it on the CPU (--device cpu)."
        )
        halve_budget(self, exc, f"a batch of {len(failed)} sentences", lone)
        rest = [i for batch in todo for i in batch]
        return [[rest[k] for k in b] for b in pack_by_length([len(sentences[i]) for i in rest], self.max_tokens)]


def pack_by_length(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Sentence indices sorted by length, packed so len(batch) × (longest + 2) ≤ max_tokens."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = lengths[i] + 2  # sorted: the newest sentence is the longest
        if cur and longest * (len(cur) + 1) > max_tokens:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def _file_fingerprint(paths: Sequence[Path]) -> str:
    return content_fingerprint(paths)


def load_elmo_asset(
    name: str = "elmo-small", device: str | torch.device | None = None, assets_dir: str | Path | None = None, **kwargs
) -> ElmoEmbedder:
    """Our own checkpoint in ``assets/<name>/`` (options.json + model.safetensors + model_card.json)."""
    path = Path(assets_dir) / name if assets_dir else ASSETS / name
    if not (path / "options.json").is_file() or not (path / "model.safetensors").is_file():
        # models.registry.load_spec adds how to train it
        raise ModelLoadError(f"ELMo asset '{name}' not found in {path} (needs options.json and model.safetensors).")
    card = require_card(path, name) if assets_dir is None else read_model_card(path) or {}  # the zoo's: whole
    bilm = load_bilm(path)
    desc = "ELMo biLM (char-CNN + 2-layer LSTMP) trained here on the LM corpus"
    return ElmoEmbedder(
        bilm,
        name=name,
        source=str(path),
        device=device,
        card=card,
        description=desc,
        fingerprint_extra=_file_fingerprint([path / "options.json", path / "model.safetensors"]),
        **kwargs,
    )


def load_allennlp_elmo(
    options_path: str | Path,
    weights_path: str | Path,
    name: str = "elmo-original",
    *,
    stateful: bool = False,
    device: str | torch.device | None = None,
    **kwargs: Any,
) -> ElmoEmbedder:
    """The original AllenNLP / bilm-tf ELMo (``options.json`` + ``weights.hdf5``) as a user model.

    ``stateful=True`` carries the LSTM states from call to call as the original did (``embed``).
    ModelLoadError naming the file for a missing file, options that are not a JSON object or lack
    keys, a truncated hdf5, a missing dataset, or shapes that disagree with the options.
    ``kwargs``: ``ElmoEmbedder``'s (``max_tokens``, ``half_on_cuda``).
    """
    # lazy: h5py (in hdf5_io) is only needed for original weights, not for the default ELMo asset.
    from models.elmo.hdf5_io import load_bilm_from_hdf5

    options_path, weights_path = Path(options_path), Path(weights_path)
    bilm = load_bilm_from_hdf5(options_path, weights_path)
    return ElmoEmbedder(
        bilm,
        name=name,
        source=str(weights_path),
        device=device,
        stateful=stateful,
        description="ELMo from the original options.json + weights.hdf5 (AllenNLP / bilm-tf)",
        fingerprint_extra=_original_fingerprint(options_path, weights_path),
        **kwargs,
    )


def _original_fingerprint(options_path: Path, weights_path: Path) -> str:
    """Both files' contents keyed by role, not by name: the published ``…_options.json`` copied as
    ``options.json`` keeps its feature cache."""
    digests = file_digests([options_path, weights_path])
    return content_fingerprint([], extra=f"options={digests[options_path]};weights={digests[weights_path]}")


OPTIONS_NAMES, WEIGHTS_NAMES = ("options.json", "_options.json"), ("weights.hdf5", "_weights.hdf5")


def find_allennlp_files(directory: str | Path) -> tuple[Path, Path] | None:
    """(options json, weights hdf5) of the original ELMo in ``directory``; None when it holds no such pair.

    Names as published (``elmo_2x4096_512_2048cnn_2xhighway_options.json`` + ``…_weights.hdf5``)
    or plain ``options.json`` + ``weights.hdf5``. Several candidates of either kind: ModelLoadError
    naming them (pick with ``elmo:OPTIONS_JSON,WEIGHTS_HDF5``).
    """
    directory = Path(directory)
    if not directory.is_dir():
        return None
    files = sorted(f for f in directory.iterdir() if f.is_file())
    options = [f for f in files if f.name == OPTIONS_NAMES[0] or f.name.endswith(OPTIONS_NAMES[1])]
    weights = [f for f in files if f.name == WEIGHTS_NAMES[0] or f.name.endswith(WEIGHTS_NAMES[1])]
    if not options or not weights:
        return None
    if len(options) > 1 or len(weights) > 1:
        raise ModelLoadError(
            f"{directory} holds several original ELMo files: options {[f.name for f in options]}, "
            f"weights {[f.name for f in weights]}. Name the pair: elmo:OPTIONS_JSON,WEIGHTS_HDF5."
        )
    return options[0], weights[0]


def inspect_allennlp_elmo(options_path: str | Path, weights_path: str | Path) -> dict[str, Any]:
    """Shape and size of an original ELMo without building it: options + the hdf5's metadata.

    Keys: family "elmo", layers (L + 1, incl. layer 0), dim (2 × projection_dim), params (from the
    biLM datasets' shapes), size_bytes (both files). ModelLoadError as ``load_allennlp_elmo``,
    except for damage inside the weight data, which only loading reads.
    """
    from models.elmo.hdf5_io import check_layout, open_weights, read_original_options  # lazy: h5py

    options_path, weights_path = Path(options_path), Path(weights_path)
    options = read_original_options(options_path)
    with open_weights(weights_path) as fin:
        shapes = check_layout(fin, weights_path, options)
    return {
        "family": ELMO.name,
        "layers": options["lstm"]["n_layers"] + 1,
        "dim": 2 * options["lstm"]["projection_dim"],
        "params": sum(int(np.prod(shape)) for shape in shapes.values()),
        "size_bytes": options_path.stat().st_size + weights_path.stat().st_size,
    }
