"""Static models on disk: the asset folders trained here, GloVe 6B, and any vectors file.

Assets (``assets/<name>/``, written by ``models.train.word2vec`` / ``models.train.glove``):
``vectors.bin`` (word2vec binary, float32), ``model_card.json``, and for fastText
``ngrams.safetensors`` (tensor ``ngrams``: (bucket, dim), stored float16 to keep the asset small)
with ``min_n``/``max_n``/``bucket`` in the card's ``"fasttext"`` entry.

Any vectors file (:func:`load_vectors_file`, :func:`inspect_vectors` from the header only,
:func:`find_vector_file` in a folder) is ``models.vector_files``, re-exported here.

The embedder itself (lookup, neighbours, analogies) is ``models.static_embedder.StaticEmbedder``,
re-exported here with ``SubwordNgrams`` and ``OutOfVocabularyError``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

from models.assets import ASSETS, CARD_FILE, read_model_card, require_card, writing_folder
from models.errors import ModelLoadError
from models.formats import FORMATS, read_vectors, write_word2vec_binary
from models.spec import STATIC
from models.static_embedder import OutOfVocabularyError, StaticEmbedder, SubwordNgrams
from models.vector_files import check_fasttext_bin, find_vector_file, inspect_vectors, load_vectors_file

__all__ = [
    "NGRAMS_FILE",
    "VECTORS_FILE",
    "OutOfVocabularyError",
    "StaticEmbedder",
    "SubwordNgrams",
    "check_fasttext_bin",
    "find_vector_file",
    "inspect_vectors",
    "load_glove_6b",
    "load_static_asset",
    "load_static_dir",
    "load_vectors_file",
    "save_static_dir",
]

VECTORS_FILE = "vectors.bin"
NGRAM_DTYPE = "float16"  # fastText's subword n-gram table as saved by default (halves the asset; --ngram-dtype)
NGRAMS_FILE = "ngrams.safetensors"


def load_glove_6b(directory: str | Path, name: str, device: str | torch.device | None = None) -> StaticEmbedder:
    """GloVe 6B 50d (400k lower-cased words, Wikipedia 2014 + Gigaword 5) from the folder of its pip package
    (``models.registry``'s spec names the package; ``load_spec`` passes its folder)."""
    root = Path(directory)
    emb_file, index_file = root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet"
    try:
        vectors = np.load(emb_file)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"Cannot read GloVe 6B vectors {emb_file}: {exc}") from exc
    try:
        import pyarrow.parquet as pq  # lazy: pyarrow is heavy and only GloVe 6B needs it

        words = pq.read_table(index_file).column("index").to_pylist()
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise ModelLoadError(f"Cannot read GloVe 6B vocabulary {index_file}: {exc}") from exc
    if vectors.shape != (len(words), 50) or any(w is None for w in words):
        raise ModelLoadError(
            f"GloVe 6B files disagree: {emb_file} has shape {vectors.shape}, {index_file} has {len(words)} words"
        )
    card = {
        "name": name,
        "family": STATIC.name,
        "corpus": "Wikipedia 2014 + Gigaword 5 (6B tokens)",
        "corpus_tokens": 6_000_000_000,
        "vocab_size": len(words),
        "dim": 50,
        "layers": 1,
        "params": int(vectors.size),
        "lowercased": True,
        "reference": "Pennington, Socher, Manning (2014). GloVe: Global Vectors for Word Representation.",
    }
    return StaticEmbedder(
        name, words, vectors, source=str(root), card=card, description="GloVe 6B 50d, pretrained", device=device
    )


def load_static_dir(
    directory: str | Path, name: str | None = None, device: str | torch.device | None = None
) -> StaticEmbedder:
    """Load a static model saved as ``vectors.bin`` (+ ``ngrams.safetensors``) + ``model_card.json``."""
    directory = Path(directory)
    name = name or directory.name
    if not directory.is_dir():  # models.registry.load_spec adds how to train it
        raise ModelLoadError(f"No checkpoint for '{name}' at {directory}.")
    card = read_model_card(directory) or {}
    vec_file = directory / card.get("files", {}).get("vectors", VECTORS_FILE)
    if not vec_file.exists():
        raise ModelLoadError(f"Checkpoint {directory} has no vectors file {vec_file.name}.")
    if (fmt := card.get("files", {}).get("format")) not in (None, *FORMATS):  # written by save_static_dir
        raise ModelLoadError(f"Corrupt model card {directory / CARD_FILE}: unknown vectors format {fmt!r}.")
    words, vectors = read_vectors(vec_file, fmt)
    ngrams = None
    ft = card.get("fasttext")
    if ft is not None:
        ng_file = directory / card.get("files", {}).get("ngrams", NGRAMS_FILE)
        try:
            stored = load_file(str(ng_file))["ngrams"]
            ngrams = SubwordNgrams(stored.astype(np.float32), min_n=int(ft["min_n"]), max_n=int(ft["max_n"]))
        except Exception as exc:  # missing file, bad header, wrong key
            raise ModelLoadError(f"Cannot read fastText n-grams {ng_file}: {exc}") from exc
        mat = ngrams.vectors
        if stored.dtype.kind != "f":  # an integer table would be cast to numbers no training gave
            raise ModelLoadError(f"{ng_file}: n-grams stored as {stored.dtype}, not floating point.")
        if not 1 <= ngrams.min_n <= ngrams.max_n:  # gensim's hashing overflowed deep inside its Cython on 0 / -1
            raise ModelLoadError(
                f"Corrupt model card {directory / CARD_FILE}: n-gram lengths {ngrams.min_n}..{ngrams.max_n} "
                "(fastText's are 1 ≤ min_n ≤ max_n)."
            )
        if int(ft.get("bucket", mat.shape[0])) != mat.shape[0]:
            raise ModelLoadError(f"{ng_file}: {mat.shape[0]} n-gram rows but the card says bucket={ft['bucket']}")
    return StaticEmbedder(
        name,
        words,
        vectors,
        source=str(directory),
        ngrams=ngrams,
        card=card,
        description=card.get("description", ""),
        device=device,
    )


def load_static_asset(
    name: str, assets_dir: str | Path | None = None, device: str | torch.device | None = None
) -> StaticEmbedder:
    """A model trained here: ``assets/<name>/`` (word2vec-sg, word2vec-cbow, fasttext, glove-lm), with its card."""
    directory = Path(assets_dir or ASSETS) / name
    if directory.is_dir():
        require_card(directory, name)
    return load_static_dir(directory, name=name, device=device)


def save_static_dir(emb: StaticEmbedder, directory: str | Path, card: dict, ngram_dtype: str = NGRAM_DTYPE) -> Path:
    """Write ``emb`` as an asset directory (vectors.bin, ngrams.safetensors for fastText, card), whole or not at all
    (``models.assets.writing_folder``: a model folder there is replaced, a folder of other files refused)."""
    with writing_folder(Path(directory)) as folder:
        _write_static(emb, folder, card, ngram_dtype)
    return Path(directory)


def _write_static(emb: StaticEmbedder, directory: Path, card: dict, ngram_dtype: str) -> None:
    write_word2vec_binary(directory / VECTORS_FILE, emb.words, emb.vectors.cpu().numpy())
    card = dict(card)
    card["files"] = {"vectors": VECTORS_FILE, "format": "word2vec-bin"}
    if emb.ngrams is not None:
        mat = emb.ngrams.vectors.cpu().numpy().astype(ngram_dtype)
        save_file({"ngrams": np.ascontiguousarray(mat)}, str(directory / NGRAMS_FILE))
        (directory / NGRAMS_FILE).chmod(0o644)  # safetensors writes 0600 temp files
        card["files"]["ngrams"] = NGRAMS_FILE
        card["fasttext"] = {
            "min_n": emb.ngrams.min_n,
            "max_n": emb.ngrams.max_n,
            "bucket": emb.ngrams.bucket,
            "ngram_dtype": ngram_dtype,
        }
    (directory / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
