"""Static embedders: GloVe 6B, the gensim-trained models, GloVe in torch, the WordNet quality check."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from corpora.errors import RequestError
from models.assets import ASSETS
from models.base import ModelLoadError, default_device
from models.registry import get_spec, load_embedder, load_spec
from models.static import (
    OutOfVocabularyError,
    StaticEmbedder,
    SubwordNgrams,
    load_static_asset,
    load_static_dir,
    load_vectors_file,
    save_static_dir,
)


@pytest.fixture(scope="module")
def glove() -> StaticEmbedder:
    return load_embedder("glove-6b-50d")


@pytest.fixture(scope="module")
def small_corpus() -> list[list[str]]:
    from corpora.lm_corpus import load_lm_corpus

    return load_lm_corpus(max_sentences=3000).train


@pytest.fixture(scope="module")
def tiny_fasttext(small_corpus):
    from models.train.word2vec import train_gensim

    model, _ = train_gensim(
        "fasttext", small_corpus, dim=16, epochs=1, min_count=3, workers=1, bucket=5000, log=lambda m: None
    )
    return model


# ---------------------------------------------------------------- GloVe 6B through the interface


def test_glove_shapes_layers_and_device(glove):
    assert glove.num_layers == 1 and glove.dim == 50 and glove.info.family == "static"
    assert glove.vectors.shape == (400_000, 50) and glove.vectors.device.type == default_device().type
    out = glove.embed([["The", "bank", "closed", "."], ["Hello"]])
    assert [o.vectors.shape for o in out] == [(1, 4, 50), (1, 1, 50)]
    assert all(o.vectors.dtype == np.float32 for o in out)
    assert out[0].words == ["The", "bank", "closed", "."]
    assert out[0].attentions is None


def test_glove_lowercase_fallback_and_oov_flags(glove):
    (out,) = glove.embed([["King", "king", "qwzxv_not_a_word", "😀", "\u200b", "مرحبا"]])
    np.testing.assert_array_equal(out.vectors[0, 0], out.vectors[0, 1])  # "King" -> "king"
    np.testing.assert_array_equal(out.vectors[0, 1], glove.word_vector("king"))
    assert out.oov.tolist() == [False, False, True, True, True, "مرحبا" not in glove.key_to_index]
    assert not out.vectors[0, 2:5].any()  # unknown -> zeros
    assert np.abs(out.vectors[0, 0]).sum() > 0


def test_glove_neighbours_of_king(glove):
    nbrs = glove.neighbours("king", k=10)
    words = [w for w, _ in nbrs]
    assert "queen" in words or "prince" in words
    assert "king" not in words
    sims = [s for _, s in nbrs]
    assert sims == sorted(sims, reverse=True) and all(-1.0 <= s <= 1.0 + 1e-6 for s in sims)
    # The cosine reported is the real cosine of the two vectors.
    a, b = glove.word_vector("king"), glove.word_vector(words[0])
    assert sims[0] == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)), abs=1e-5)


def test_glove_analogy_3cosadd(glove):
    res = glove.analogy("man", "king", "woman", k=5)
    words = [w for w, _ in res]
    assert "queen" in words
    assert not {"man", "king", "woman"} & set(words)  # inputs excluded


def test_unknown_word_queries_raise(glove):
    with pytest.raises(OutOfVocabularyError, match="not in the vocabulary"):
        glove.neighbours("qwzxv_not_a_word")
    with pytest.raises(OutOfVocabularyError):
        glove.analogy("man", "qwzxv_not_a_word", "woman")
    with pytest.raises(ValueError):
        glove.neighbours("king", k=0)


def test_empty_inputs(glove):
    assert glove.embed([]) == []
    (out,) = glove.embed([[]])
    assert out.vectors.shape == (1, 0, 50) and out.oov.shape == (0,)


def test_long_sentence_and_determinism(glove):
    rng = np.random.default_rng(0)
    words = [glove.words[i] for i in rng.integers(0, 50_000, 10_000)]
    a = glove.embed([words, ["a", "b"]])
    b = glove.embed([words, ["a", "b"]])
    assert a[0].vectors.shape == (1, 10_000, 50)
    np.testing.assert_array_equal(a[0].vectors, b[0].vectors)
    # Batched lookup equals word-by-word lookup.
    np.testing.assert_array_equal(a[0].vectors[0, :50], np.stack([glove.word_vector(w) for w in words[:50]]))
    # a RequestError (a LabError: the command line's one "error:" line, not a traceback) naming the sentence
    with pytest.raises(RequestError, match=r"Sentence 2 has 100,001 words; .* at most 100,000 in one sentence"):
        glove.embed([["a"], ["x"] * (glove.max_words_per_sentence + 1)])


def test_fingerprint_depends_on_content(glove):
    assert glove.fingerprint() == glove.fingerprint()
    words = ["a", "b", "c"]
    v = np.eye(3, dtype=np.float32)
    e1 = StaticEmbedder("toy", words, v, source="test", device="cpu")
    e2 = StaticEmbedder("toy", words, v * 2, source="test", device="cpu")
    assert e1.fingerprint() != e2.fingerprint() != glove.fingerprint()


# ---------------------------------------------------------------- fastText: vectors for unseen words


def test_fasttext_oov_vectors_match_gensim(tiny_fasttext):
    from models.train.word2vec import to_embedder

    emb = to_embedder(tiny_fasttext, "ft")
    unseen = ["blorptastic", "unbankable", "😀", "Zwölf"]
    seen = tiny_fasttext.wv.index_to_key[:3]
    (out,) = emb.embed([seen + unseen])
    assert out.oov.tolist() == [False] * 3 + [w not in emb.key_to_index for w in unseen]
    assert (np.abs(out.vectors[0, 3:]).sum(-1) > 0).all()  # n-gram vectors
    for k, w in enumerate(seen + unseen):
        np.testing.assert_allclose(out.vectors[0, k], tiny_fasttext.wv[w], rtol=1e-5, atol=1e-6)
    assert [w for w, _ in emb.neighbours("blorptastic", 3)]  # queries work too
    # Only "" is too short for any n-gram ("<>"): embed refuses an empty word (round eleven); the n-gram table
    # still gives it zeros, also next to words that have n-grams.
    with pytest.raises(RequestError, match="word 1 is empty"):
        emb.embed([["", "blorptastic"]])
    rows = emb._ngram_vectors(["", "blorptastic", ""]).cpu().numpy()
    assert not rows[[0, 2]].any() and rows[1].any()


def test_fasttext_save_load_round_trip(tmp_path, tiny_fasttext):
    from models.train.word2vec import to_embedder

    emb = to_embedder(tiny_fasttext, "ft")
    save_static_dir(emb, tmp_path / "ft32", {"name": "ft"}, ngram_dtype="float32")
    back = load_static_dir(tmp_path / "ft32", device="cpu")
    words = ["the", "blorptastic", "😀", ""]
    a, b = emb.embed([words[:3]]), back.embed([words[:3]])
    np.testing.assert_array_equal(a[0].vectors, b[0].vectors)
    assert back.ngrams.min_n == 3 and back.ngrams.max_n == 6 and back.ngrams.bucket == 5000
    # float16 storage (used for the asset) changes unseen-word vectors only by rounding.
    save_static_dir(emb, tmp_path / "ft16", {"name": "ft"})
    half = load_static_dir(tmp_path / "ft16", device="cpu").embed([words[:3]])
    np.testing.assert_allclose(half[0].vectors, a[0].vectors, atol=2e-3)


def test_gensim_training_deterministic_with_one_worker(small_corpus):
    from models.train.word2vec import train_gensim

    runs = [
        train_gensim(
            "word2vec", small_corpus[:1000], dim=12, epochs=1, min_count=2, workers=1, seed=3, log=lambda m: None
        )[0]
        for _ in range(2)
    ]
    assert runs[0].wv.index_to_key == runs[1].wv.index_to_key
    np.testing.assert_array_equal(runs[0].wv.vectors, runs[1].wv.vectors)
    other = train_gensim(
        "word2vec", small_corpus[:1000], dim=12, epochs=1, min_count=2, workers=1, seed=4, log=lambda m: None
    )[0]
    assert not np.array_equal(other.wv.vectors, runs[0].wv.vectors)


@pytest.mark.parametrize("kind", ["word2vec", "fasttext"])
def test_train_static_cli_writes_loadable_asset(tmp_path, kind):
    from models.train.word2vec import main

    out = tmp_path / kind
    rc = main(
        [
            kind,
            "--max-sentences",
            "3000",
            "--epochs",
            "1",
            "--dim",
            "16",
            "--min-count",
            "2",
            "--workers",
            "1",
            "--out",
            str(out),
        ]
        + (["--bucket", "2000"] if kind == "fasttext" else [])
    )
    assert rc == 0
    card = json.loads((out / "model_card.json").read_text())
    for key in (
        "name",
        "family",
        "corpus",
        "corpus_tokens",
        "vocab_size",
        "params",
        "dim",
        "layers",
        "epochs",
        "wall_time_s",
        "command",
        "date",
        "machine",
    ):
        assert key in card, key
    assert card["command"].startswith(f"python -m models train {kind} ")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", card["date"]) and "torch threads" in card["machine"]
    emb = load_static_dir(out, device="cpu")
    assert emb.dim == 16 and len(emb) == card["vocab_size"] and emb.num_layers == 1
    assert (emb.ngrams is not None) == (kind == "fasttext")
    if kind == "word2vec":
        assert card["final_loss"] > 0


# ---------------------------------------------------------------- assets, files and corrupt checkpoints


def test_load_vectors_file_any_format(tmp_path):
    from models.formats import write_vectors

    words = ["alpha", "Beta", "γ"]
    v = np.arange(12, dtype=np.float32).reshape(3, 4)
    for fmt, name in [("word2vec", "a.txt"), ("word2vec-bin", "a.bin"), ("glove", "g.txt"), ("vec", "a.vec")]:
        emb = load_vectors_file(write_vectors(tmp_path / name, words, v, fmt), device="cpu")
        assert emb.vocab == words
        np.testing.assert_array_equal(emb.vectors.numpy(), v)
        # Fallback is exact, then lower-cased: "ALPHA" finds "alpha"; "beta" does not find "Beta".
        (out,) = emb.embed([["ALPHA", "Beta", "γ", "beta", "delta"]])
        assert out.oov.tolist() == [False, False, False, True, True]
        np.testing.assert_array_equal(out.vectors[0, :3], v)


def test_corrupt_checkpoints_give_clear_errors(tmp_path):
    emb = StaticEmbedder("toy", ["a", "b", "c"], np.ones((3, 4), np.float32), source="t", device="cpu")
    d = save_static_dir(emb, tmp_path / "toy", {"name": "toy"})
    assert load_static_dir(d).vocab == ["a", "b", "c"]
    data = (d / "vectors.bin").read_bytes()
    (d / "vectors.bin").write_bytes(data[:-5])
    with pytest.raises(ModelLoadError, match=r"vectors\.bin, line 4\b.*truncated"):
        load_static_dir(d)
    (d / "vectors.bin").write_bytes(data)
    (d / "model_card.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="Corrupt model card"):
        load_static_dir(d)
    with pytest.raises(ModelLoadError, match="No checkpoint for 'word2vec-sg'") as err:
        load_static_asset("word2vec-sg", assets_dir=tmp_path / "nowhere")
    assert "Train it with" not in str(err.value)  # a loader does not know the registry …
    with pytest.raises(ModelLoadError, match="No checkpoint .*Train it with: python -m models train word2vec$"):
        load_spec(get_spec("word2vec-sg"), assets_dir=tmp_path / "nowhere")  # … the registry adds it


def test_corrupt_ngrams_file(tmp_path):
    emb = StaticEmbedder(
        "ft",
        ["a", "b"],
        np.ones((2, 4), np.float32),
        source="t",
        device="cpu",
        ngrams=SubwordNgrams(np.ones((10, 4), np.float32), 3, 6),
    )
    d = save_static_dir(emb, tmp_path / "ft", {"name": "ft"})
    (d / "ngrams.safetensors").write_bytes((d / "ngrams.safetensors").read_bytes()[:40])
    with pytest.raises(ModelLoadError, match="ngrams.safetensors"):
        load_static_dir(d)


TRAINED = ["word2vec-sg", "word2vec-cbow", "fasttext", "glove-lm"]


@pytest.mark.parametrize("name", TRAINED)
def test_trained_asset_loads_and_beats_random_on_wordnet(name):
    from models.quality import wordnet_similarity

    if not (ASSETS / name / "model_card.json").exists():
        pytest.fail(f"asset {name} missing: train it with the command in docs/models.md")
    emb = load_embedder(name)
    card = emb.info.card
    assert emb.num_layers == 1 and emb.dim == card["dim"] and len(emb) == card["vocab_size"]
    size = sum(f.stat().st_size for f in (ASSETS / name).iterdir())
    assert size < 21e6
    (out,) = emb.embed([["The", "bank", "zzqxj", "😀"]])
    assert out.vectors.shape == (1, 4, emb.dim)
    assert out.oov.tolist()[:2] == [False, False] and out.oov[2] and out.oov[3]
    assert bool(np.abs(out.vectors[0, 2]).sum() > 0) == (name == "fasttext")  # only fastText builds OOV vectors
    q = wordnet_similarity(emb)
    assert q["n_pairs"] >= 1000
    assert q["auc"] > 0.55 and q["mean_cos_synonyms"] > q["mean_cos_random"], q


def test_glove6b_wordnet_check_and_random_baseline(glove):
    from models.quality import wordnet_similarity

    q = wordnet_similarity(glove)
    assert q["auc"] > 0.7 and q["mean_cos_synonyms"] > q["mean_cos_random"]
    # The check itself is fair: random vectors over the same vocabulary score about 0.5.
    rnd = StaticEmbedder(
        "random", glove.words, np.random.default_rng(0).standard_normal((len(glove), 50)), source="random", device="cpu"
    )
    r = wordnet_similarity(rnd)
    assert abs(r["auc"] - 0.5) < 0.03, r


# ---------------------------------------------------------------- GloVe in torch


def test_cooccurrence_weighting():
    from models.train.glove import cooccurrence, weighting

    X = cooccurrence([["a", "b", "c", "OOV", "a"], ["c", "a"]], ["a", "b", "c"], window=2).tocsr()
    ia, ib, ic = 0, 1, 2
    # sentence 1 without the OOV word: a b c a ; sentence 2: c a (no pairs across sentences)
    assert X[ia, ib] == pytest.approx(1 + 1 / 2)  # a-b (d=1), b-a (second a, d=2)
    assert X[ia, ic] == pytest.approx(1 / 2 + 1 + 1)  # a..c (d=2), c-a (d=1), c-a in sentence 2
    assert X[ib, ic] == pytest.approx(1.0)
    assert (X != X.T).nnz == 0 and X[ia, ia] == 0
    x = torch.tensor([1.0, 50.0, 100.0, 500.0])
    np.testing.assert_allclose(weighting(x).numpy(), [0.01**0.75, 0.5**0.75, 1.0, 1.0], rtol=1e-6)


def test_glove_training_lowers_loss_on_real_text(small_corpus):
    from models.train.glove import GloVeModel, build_vocab, cooccurrence, glove_loss, train_glove, weighting

    vocab = build_vocab(small_corpus[:1500], min_count=3, max_vocab=1000)
    X = cooccurrence(small_corpus[:1500], vocab)
    model, losses = train_glove(X, dim=16, epochs=4, batch_size=8192, device=torch.device("cpu"), log=lambda m: None)
    assert isinstance(model, GloVeModel) and len(losses) == 4
    assert losses[-1] < 0.8 * losses[0] and all(b < a for a, b in zip(losses, losses[1:]))
    # The AdaGrad step decreases the batch loss it reports.
    coo = X.tocoo()
    i, j = torch.from_numpy(coo.row[:2000].astype(np.int64)), torch.from_numpy(coo.col[:2000].astype(np.int64))
    vals = torch.from_numpy(coo.data[:2000].astype(np.float32))
    before = float(glove_loss(model(i, j), vals.log(), weighting(vals)))
    reported = model.adagrad_step(i, j, vals.log(), weighting(vals), lr=0.05)
    assert reported == pytest.approx(before, rel=1e-4)
    assert float(glove_loss(model(i, j), vals.log(), weighting(vals))) < before
    assert model.word_vectors().shape == (len(vocab), 16)


def test_glove_training_is_deterministic(small_corpus):
    from models.train.glove import build_vocab, cooccurrence, train_glove

    vocab = build_vocab(small_corpus[:500], min_count=2)
    X = cooccurrence(small_corpus[:500], vocab)
    a = train_glove(X, dim=8, epochs=1, device=torch.device("cpu"), log=lambda m: None)[0].word_vectors()
    b = train_glove(X, dim=8, epochs=1, device=torch.device("cpu"), log=lambda m: None)[0].word_vectors()
    assert torch.equal(a, b)


def _glove_c_pair_updates(params: dict, i, j, log_x, fx, lr: float) -> None:
    """glove.c's ``glove_thread`` loop, transcribed (numpy, in place): for each pair the gradient is scaled by eta
    first, each step divides by the accumulator *before* the pair's square is added, accumulators start at 1."""
    w, wt, b, bt = (params[n] for n in ("w", "w_tilde", "b", "b_tilde"))
    gw, gwt, gb, gbt = (params["gsq_" + n] for n in ("w", "w_tilde", "b", "b_tilde"))
    for k in range(len(i)):
        l1, l2 = int(i[k]), int(j[k])
        diff = w[l1] @ wt[l2] + b[l1] + bt[l2] - log_x[k]
        fdiff = fx[k] * diff * lr
        temp1, temp2 = fdiff * wt[l2], fdiff * w[l1]
        w[l1] -= temp1 / np.sqrt(gw[l1])
        wt[l2] -= temp2 / np.sqrt(gwt[l2])
        gw[l1] += temp1 * temp1
        gwt[l2] += temp2 * temp2
        b[l1] -= fdiff / np.sqrt(gb[l1])
        bt[l2] -= fdiff / np.sqrt(gbt[l2])
        gb[l1] += fdiff * fdiff
        gbt[l2] += fdiff * fdiff


def test_adagrad_step_is_glove_c_s_update():
    """The closed-form step equals glove.c's per-pair update on a batch touching each row once (there the batch and
    the sequential order agree). It had divided by √(1 + Σ g²) with g unscaled by eta: a learning rate shrinking
    400× faster (at eta 0.05), and a weaker model at the same epochs (audit, 2026-12-07)."""
    from models.train.glove import GloVeModel, weighting

    torch.manual_seed(0)
    model = GloVeModel(40, 8)
    ref = {n: t.detach().double().numpy().copy() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    for _step in range(3):
        i, j = torch.randperm(40)[:24], torch.randperm(40)[:24]
        x = torch.rand(24) * 200 + 0.1
        model.adagrad_step(i, j, x.log(), weighting(x), lr=0.05)
        _glove_c_pair_updates(ref, i.numpy(), j.numpy(), x.log().double().numpy(), weighting(x).double().numpy(), 0.05)
        for n, t in [*model.named_parameters(), *model.named_buffers()]:
            np.testing.assert_allclose(t.detach().double().numpy(), ref[n], rtol=2e-5, atol=1e-7, err_msg=n)


def test_a_dataset_whose_shortest_sentences_glove_does_not_know_still_runs(glove, data_root, tmp_path):
    """The "mostly unknown" refusal was first judged per batch: EWT train's first 530 sentences, length-sorted into
    batches of 512, leave a last batch of 18 short ones (URLs, names) that GloVe does not know, and ``probes
    structural --model glove-6b-50d --limit 530`` was refused. It is judged over the whole dataset: 1–2 % unknown."""
    from corpora.conllu import iter_trees
    from features import get_features
    from probes.tasks.datafiles import first

    trees = first(iter_trees(data_root / "ud_english_ewt/en_ewt-ud-train.conllu"), 530)
    sentences = [list(t.words) for t in trees]
    feats = get_features(glove, "ewt-train-limit530", sentences, root=tmp_path, show_progress=False)
    assert feats.layer(0).shape == (sum(map(len, sentences)), 50)
    tail = sorted(sentences, key=len)[:18]  # the batch that was refused alone
    assert sum(glove.index(w) is None for s in tail for w in s) > sum(map(len, tail)) / 2
