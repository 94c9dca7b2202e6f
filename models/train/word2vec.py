"""Train word2vec (skip-gram / CBOW) and fastText with gensim on the project's LM corpus.

    python -m models train word2vec   [options]   # skip-gram  -> assets/word2vec-sg/
    python -m models train cbow       [options]   # CBOW       -> assets/word2vec-cbow/
    python -m models train fasttext   [options]   # skip-gram + subword n-grams -> assets/fasttext/

Writes ``vectors.bin`` (word2vec binary), for fastText ``ngrams.safetensors`` (hashed n-gram
vectors, float16 by default to keep the asset under ~20 MB), and ``model_card.json``.

Determinism: gensim seeds its initial vectors from ``--seed``; with ``--workers 1`` two runs
give identical vectors. With more workers the thread scheduling changes the order of updates,
so vectors differ slightly from run to run (quality does not).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import gensim
import numpy as np
from gensim.models import FastText, Word2Vec
from gensim.models.callbacks import CallbackAny2Vec

from corpora.cli_help import state_defaults
from corpora.lm_corpus import load_lm_corpus
from models.assets import ASSETS, check_replaceable
from models.quality import card_quality
from models.static import NGRAM_DTYPE, StaticEmbedder, SubwordNgrams, save_static_dir
from models.train.common import check_vocabulary, machine_description, nonnegative_int, positive_int, utc_now

KINDS = {"word2vec": "word2vec-sg", "cbow": "word2vec-cbow", "fasttext": "fasttext"}


def build_parser(kind: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"python -m models train {kind}", description=f"Train {KINDS[kind]} with gensim on the LM corpus."
    )
    p.add_argument("--out", type=Path, default=None, help=f"output directory (default assets/{KINDS[kind]}/)")
    p.add_argument("--dim", type=positive_int, default=100)
    p.add_argument("--epochs", type=positive_int, default=5)
    p.add_argument("--window", type=positive_int, default=5)
    p.add_argument("--negative", type=positive_int, default=5, help="negative samples per positive")
    p.add_argument("--min-count", type=nonnegative_int, default=5, help="ignore words seen fewer times")
    p.add_argument("--max-vocab", type=positive_int, default=40_000, help="training vocabulary cap (most frequent)")
    p.add_argument(
        "--save-vocab",
        type=positive_int,
        default=None,
        help="store only the N most frequent word vectors (fastText default 20000: the rest "
        "get n-gram vectors, which keeps the asset small)",
    )
    p.add_argument("--max-sentences", type=positive_int, default=None, help="use only the first N corpus sentences")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lowercase", action="store_true", help="lower-case the corpus")
    p.add_argument("--workers", type=positive_int, default=2, help="threads (1 = reproducible vectors)")
    if kind == "fasttext":
        p.add_argument("--bucket", type=positive_int, default=50_000, help="hashed n-gram rows")
        p.add_argument("--min-n", type=positive_int, default=3)
        p.add_argument("--max-n", type=positive_int, default=6)
        p.add_argument("--ngram-dtype", choices=["float16", "float32"], default=NGRAM_DTYPE)
    return state_defaults(p)


def train_gensim(
    kind: str,
    sentences: list[list[str]],
    *,
    dim: int = 100,
    epochs: int = 5,
    window: int = 5,
    negative: int = 5,
    min_count: int = 5,
    max_vocab: int | None = None,
    seed: int = 0,
    workers: int = 1,
    bucket: int = 50_000,
    min_n: int = 3,
    max_n: int = 6,
    log=print,
):
    """Train a gensim Word2Vec (kind word2vec / cbow) or FastText model; logs loss per epoch.

    Returns (model, per-epoch losses). gensim's FastText does not compute a training loss, so its
    losses are None.
    """

    class EpochLogger(CallbackAny2Vec):
        """Prints epoch, wall time and the epoch's summed loss.

        gensim tallies the loss cumulatively in a float32, which stops growing once it is large
        (gensim issues #2735, #2617); resetting the tally after every epoch keeps each epoch's
        sum accurate (the maintainers' suggested workaround).
        """

        def __init__(self) -> None:
            self.epoch, self.t0, self.losses = 0, time.time(), []

        def on_epoch_end(self, model) -> None:
            self.epoch += 1
            loss = None
            if kind != "fasttext":
                loss = float(model.get_latest_training_loss())
                model.running_training_loss = 0.0
            self.losses.append(loss)
            msg = f"  epoch {self.epoch}/{epochs}  {time.time() - self.t0:6.1f}s"
            log(msg + (f"  loss {loss:.4g}" if loss is not None else "  (gensim FastText reports no loss)"))

    common = dict(
        vector_size=dim,
        window=window,
        negative=negative,
        min_count=min_count,
        max_final_vocab=max_vocab,
        seed=seed,
        workers=workers,
        epochs=epochs,
        sg=0 if kind == "cbow" else 1,
    )
    cb = EpochLogger()
    if kind == "fasttext":
        model = FastText(sentences=sentences, bucket=bucket, min_n=min_n, max_n=max_n, callbacks=[cb], **common)
    elif kind in ("word2vec", "cbow"):
        model = Word2Vec(sentences=sentences, compute_loss=True, callbacks=[cb], **common)
    else:
        raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    return model, cb.losses


def to_embedder(model, name: str, save_vocab: int | None = None):
    """A StaticEmbedder from a trained gensim model (the ``save_vocab`` most frequent words)."""
    wv = model.wv
    n = len(wv.index_to_key) if save_vocab is None else min(save_vocab, len(wv.index_to_key))
    ngrams = None
    if hasattr(wv, "vectors_ngrams"):
        ngrams = SubwordNgrams(np.array(wv.vectors_ngrams, dtype=np.float32), min_n=wv.min_n, max_n=wv.max_n)
    # gensim sorts index_to_key by descending frequency, so the first n are the most frequent.
    return StaticEmbedder(
        name, wv.index_to_key[:n], np.array(wv.vectors[:n]), source="gensim", ngrams=ngrams, device="cpu"
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in KINDS:
        print(f"usage: python -m models train {{{','.join(KINDS)}}} [options]", file=sys.stderr)
        return 2
    kind, rest = argv[0], argv[1:]
    parser = build_parser(kind)
    args = parser.parse_args(rest)
    if kind == "fasttext" and args.min_n > args.max_n:  # gensim would train without any subword, and say nothing
        parser.error(f"--min-n {args.min_n} is above --max-n {args.max_n}: no n-gram length is left.")
    name = KINDS[kind]
    out = args.out or ASSETS / name
    out = check_replaceable(out)  # before the training, not after it
    save_vocab = args.save_vocab if args.save_vocab is not None else (20_000 if kind == "fasttext" else None)
    logging.basicConfig(level=logging.WARNING)

    t0 = time.time()
    print(f"[{name}] loading LM corpus (lowercase={args.lowercase}, max_sentences={args.max_sentences})", flush=True)
    corpus = load_lm_corpus(
        lowercase=args.lowercase, max_sentences=args.max_sentences
    )  # fixed split; --seed seeds training
    tokens = corpus.num_train_tokens
    print(f"[{name}] {len(corpus.train):,} sentences, {tokens:,} tokens ({time.time() - t0:.1f}s)", flush=True)

    counts = Counter(w for sentence in corpus.train for w in sentence)
    check_vocabulary(sum(c >= args.min_count for c in counts.values()))
    t1 = time.time()
    model, losses = train_gensim(
        kind,
        corpus.train,
        dim=args.dim,
        epochs=args.epochs,
        window=args.window,
        negative=args.negative,
        min_count=args.min_count,
        max_vocab=args.max_vocab,
        seed=args.seed,
        workers=args.workers,
        log=lambda m: print(f"[{name}]{m}", flush=True),
        **({"bucket": args.bucket, "min_n": args.min_n, "max_n": args.max_n} if kind == "fasttext" else {}),
    )
    train_time = time.time() - t1
    emb = to_embedder(model, name, save_vocab)
    print(
        f"[{name}] trained in {train_time:.1f}s; training vocab {len(model.wv.index_to_key):,}, "
        f"saved vocab {len(emb.words):,}",
        flush=True,
    )

    quality = card_quality(emb, log=lambda m: print(f"[{name}]{m}", flush=True))

    params = emb.vectors.numel() + (emb.ngrams.vectors.numel() if emb.ngrams is not None else 0)
    card = {
        "name": name,
        "family": "static",
        "description": {
            "word2vec": "word2vec skip-gram",
            "cbow": "word2vec CBOW",
            "fasttext": "fastText skip-gram with character n-grams",
        }[kind]
        + " (gensim) trained on the LM corpus",
        "corpus": "LM corpus (corpora.lm_corpus): " + ", ".join(corpus.sources) + " — train split",
        "corpus_tokens": tokens,
        "corpus_sentences": len(corpus.train),
        "lowercased": args.lowercase,
        "vocab_size": len(emb.words),
        "training_vocab_size": len(model.wv.index_to_key),
        "params": int(params),
        "dim": args.dim,
        "layers": 1,
        "epochs": args.epochs,
        "hyperparameters": {
            "sg": 0 if kind == "cbow" else 1,
            "window": args.window,
            "negative": args.negative,
            "min_count": args.min_count,
            "max_vocab": args.max_vocab,
            "seed": args.seed,
            "workers": args.workers,
            "library": "gensim " + gensim.__version__,
            **({"bucket": args.bucket, "min_n": args.min_n, "max_n": args.max_n} if kind == "fasttext" else {}),
        },
        "wall_time_s": round(train_time, 1),
        "final_loss": losses[-1] if losses and losses[-1] is not None else None,
        "epoch_losses": [loss for loss in losses if loss is not None],
        "loss_note": (
            "gensim's summed negative-sampling loss of the last epoch (tally reset every epoch)"
            if kind != "fasttext"
            else "gensim FastText does not report a training loss"
        ),
        "quality": quality,
        "command": "python -m models train " + " ".join(shlex.quote(a) for a in argv),
        "date": utc_now(),
        "machine": machine_description(),
    }
    save_static_dir(emb, out, card, ngram_dtype=getattr(args, "ngram_dtype", NGRAM_DTYPE))
    size = sum(f.stat().st_size for f in Path(out).iterdir())
    print(f"[{name}] wrote {out} ({size / 1e6:.1f} MB) in {time.time() - t0:.1f}s total", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
