"""Every standard static-vector file as a user model: one small real vocabulary written in each format.

A gensim fastText model is trained for a fraction of a second on the first Brown news sentences
(300 words, dim 16, 2,000 n-gram buckets); its words and vectors are written as word2vec text and
binary, GloVe text, fastText ``.vec`` and ``.bin``, and gensim ``.save()`` files. Every file must load
to the same vectors; fastText's unknown words must get gensim's own vectors; every bad file must be
refused with a ModelLoadError naming it.
"""

from __future__ import annotations

import gzip
import pickle
import re
import shutil
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from models.base import ModelLoadError
from models.formats import guess_format, write_vectors
from models.static import check_fasttext_bin, find_vector_file, inspect_vectors, load_vectors_file

DIM, BUCKET = 16, 2000
TEXT_FORMATS = {"word2vec": "w2v.txt", "word2vec-bin": "w2v.bin", "glove": "glove.txt", "vec": "ft.vec"}
# Never in the vocabulary, not even lower-cased: fastText builds their vectors from n-grams.
UNSEEN = ["Glorptastic", "zqxjv", "unpresidential", "Kennedyesque", "ß"]


@pytest.fixture(scope="module")
def trained():
    from gensim.models import FastText

    from corpora.nltk_corpora import nltk_corpus

    sents = [list(s) for s in nltk_corpus("brown").sents(categories="news")[:1500]]
    model = FastText(
        sents, vector_size=DIM, min_count=2, max_final_vocab=300, bucket=BUCKET, epochs=1, workers=1, seed=0
    )
    assert 250 <= len(model.wv) <= 300
    return model


@pytest.fixture(scope="module")
def files(trained, tmp_path_factory) -> dict[str, Path]:
    """One file per format, all holding ``trained.wv``'s words and vectors."""
    from gensim.models import KeyedVectors
    from gensim.models.fasttext import save_facebook_model

    d = tmp_path_factory.mktemp("vectors")
    wv = trained.wv
    out = {fmt: write_vectors(d / name, wv.index_to_key, wv.vectors, fmt) for fmt, name in TEXT_FORMATS.items()}
    save_facebook_model(trained, str(d / "ft.bin"))
    out["fasttext-bin"] = d / "ft.bin"
    plain = KeyedVectors(DIM)
    plain.add_vectors(wv.index_to_key, wv.vectors)
    plain.save(str(d / "plain.kv"))
    out["gensim"] = d / "plain.kv"
    wv.save(str(d / "ft.kv"))  # FastTextKeyedVectors: n-grams included
    out["gensim-fasttext"] = d / "ft.kv"
    trained.save(str(d / "full.model"))  # a whole FastText model: its .wv is used
    out["gensim-model"] = d / "full.model"
    return out


def _load(path, **kw):
    return load_vectors_file(path, device="cpu", allow_pickle=path.suffix in (".kv", ".model"), **kw)


def _refused(path, match: str, **kw) -> str:
    with pytest.raises(ModelLoadError) as exc:
        load_vectors_file(path, device="cpu", **kw)
    msg = str(exc.value)
    assert str(path) in msg, msg  # every message names the file
    assert re.search(match, msg), msg
    return msg


# ---------------------------------------------------------------- every format, the same vectors


def test_every_format_is_sniffed_and_loads_the_same_vectors(trained, files):
    wv = trained.wv
    fingerprints = {}
    for key, path in files.items():
        emb = _load(path)
        assert guess_format(path) == ("gensim" if key.startswith("gensim") else key)
        assert emb.vocab == wv.index_to_key, key
        assert emb.num_layers == 1 and emb.dim == DIM and emb.info.card["format"] == guess_format(path)
        np.testing.assert_array_equal(emb.vectors.numpy(), wv.vectors, err_msg=key)
        assert (emb.ngrams is not None) == (key in ("fasttext-bin", "gensim-fasttext", "gensim-model")), key
        fingerprints[key] = emb.fingerprint()
    # Same content, same fingerprint, whatever the format; the n-gram table is content too.
    assert len({fingerprints[k] for k in (*TEXT_FORMATS, "gensim")}) == 1
    assert len({fingerprints[k] for k in ("fasttext-bin", "gensim-fasttext", "gensim-model")}) == 1
    assert fingerprints["fasttext-bin"] != fingerprints["gensim"]


def test_fasttext_bin_matches_gensim_for_known_and_unknown_words(files):
    from gensim.models.fasttext import load_facebook_vectors

    kv = load_facebook_vectors(str(files["fasttext-bin"]))
    for key in ("fasttext-bin", "gensim-fasttext"):
        emb = _load(files[key])
        assert emb.info.card["fasttext"] == {"min_n": kv.min_n, "max_n": kv.max_n, "bucket": BUCKET}
        np.testing.assert_array_equal(emb.ngrams.vectors.numpy(), kv.vectors_ngrams)
        for w in UNSEEN:
            assert w not in kv.key_to_index and w.lower() not in kv.key_to_index
            np.testing.assert_allclose(emb.word_vector(w), kv[w], rtol=1e-6, atol=1e-7, err_msg=w)
        (out,) = emb.embed([["the", *UNSEEN]])
        assert out.vectors.shape == (1, 1 + len(UNSEEN), DIM)
        assert out.oov.tolist() == [False] + [True] * len(UNSEEN)
        np.testing.assert_array_equal(out.vectors[0, 0], kv["the"])
        np.testing.assert_allclose(out.vectors[0, 1:], np.stack([kv[w] for w in UNSEEN]), rtol=1e-6, atol=1e-7)
        assert np.abs(out.vectors[0, 1:]).sum(axis=1).min() > 0


def test_plain_formats_give_zeros_for_unknown_words(files):
    (out,) = _load(files["vec"]).embed([["the", "Glorptastic"]])
    assert out.oov.tolist() == [False, True] and not out.vectors[0, 1].any()


def test_same_content_in_two_folders_same_fingerprint(files, tmp_path):
    for key in ("word2vec-bin", "fasttext-bin", "glove"):
        src = files[key]
        copy = tmp_path / key / ("renamed" + src.suffix)
        copy.parent.mkdir()
        shutil.copy(src, copy)
        a, b = _load(src), _load(copy)
        assert a.fingerprint() == b.fingerprint() and a.info.source != b.info.source
    changed = tmp_path / "changed.txt"
    text = files["glove"].read_text(encoding="utf-8").splitlines()
    word, *vals = text[5].split(" ")
    text[5] = " ".join([word, str(float(vals[0]) + 1.0), *vals[1:]])
    changed.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert _load(changed).fingerprint() != _load(files["glove"]).fingerprint()


# ---------------------------------------------------------------- header-only inspection, folders


def test_inspect_reads_only_the_header(trained, files, tmp_path):
    V = len(trained.wv)
    for key, path in files.items():
        info = inspect_vectors(path)
        assert info["size_bytes"] == path.stat().st_size
        if key.startswith("gensim"):  # a pickle is never opened to inspect it
            assert info["format"] == "gensim" and info["vocab_size"] is info["dim"] is info["params"] is None
            continue
        assert (info["format"], info["vocab_size"], info["dim"]) == (key, V, DIM)
        buckets = BUCKET if key == "fasttext-bin" else 0
        assert info["params"] == (V + buckets) * DIM
        assert info["fasttext"] == ({"min_n": 3, "max_n": 6, "bucket": BUCKET} if buckets else None)
    # Header only: rows that would not load do not matter, the declared counts are reported.
    p = tmp_path / "big.vec"
    p.write_text("3000000 300\nnot a row\n", encoding="utf-8")
    assert inspect_vectors(p)["vocab_size"] == 3_000_000 and inspect_vectors(p)["params"] == 900_000_000
    # GloVe: the non-empty lines are counted, whatever the chunking, trailing newline or not.
    g = tmp_path / "g.txt"
    g.write_bytes(b"a 1 2\n\nb 3 4\nc 5 6\n\n\nd 7 8")
    assert (inspect_vectors(g)["vocab_size"], inspect_vectors(g)["dim"]) == (4, 2)
    assert len(_load(g)) == 4


def test_find_vector_file(files, tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    assert find_vector_file(d) is None
    (d / "README.txt").write_text("GloVe vectors trained on news.\nLicense: CC-BY.\n", encoding="utf-8")
    (d / "pytorch_model.bin").write_bytes(b"PK\x03\x04" + bytes(100))
    (d / "model_card.json").write_text("{}", encoding="utf-8")
    (d / "corpus.tar.gz").write_bytes(gzip.compress(b"not vectors"))
    assert find_vector_file(d) is None
    shutil.copy(files["glove"], d / "vectors.txt")
    assert find_vector_file(d) == d / "vectors.txt"
    shutil.copy(files["fasttext-bin"], d / "cc.bin")
    with pytest.raises(ModelLoadError, match=r"2 vectors files \(cc\.bin, vectors\.txt\)"):
        find_vector_file(d)
    for f in (d / "cc.bin", d / "vectors.txt"):
        f.unlink()
    (d / "cc.en.vec.gz").write_bytes(gzip.compress(files["vec"].read_bytes()))
    assert find_vector_file(d) == d / "cc.en.vec.gz"  # found, and loading says what to do:
    _refused(d / "cc.en.vec.gz", r"gzip-compressed: decompress it first")
    with pytest.raises(ModelLoadError, match="no such directory"):
        find_vector_file(tmp_path / "nowhere")


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("name", ["e.txt", "e.vec", "e.bin", "e.kv", "e.model", "e"])
def test_empty_file(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    _refused(tmp_path / name, "empty file")


def test_directory_instead_of_file(tmp_path):
    _refused(tmp_path, "is a directory, not a vectors file")


def test_undecidable_content(tmp_path):
    for name in ("notes.dat", "notes.vec", "notes"):
        (tmp_path / name).write_text("These are my notes about vectors.\nNothing else.\n", encoding="utf-8")
        _refused(tmp_path / name, r"Cannot tell the format.*line 1.*read from the file itself.*format argument")
    (tmp_path / "nul.dat").write_bytes(b"\x00\x01\x02\x03" * 10)
    _refused(tmp_path / "nul.dat", "Cannot tell the format")


def test_content_decides_and_fmt_overrides(files, tmp_path):
    odd = tmp_path / "vectors.dat"  # unknown extension, GloVe content
    shutil.copy(files["glove"], odd)
    assert guess_format(odd) == "glove" and len(_load(odd)) == len(_load(files["glove"]))
    text_bin = tmp_path / "text.bin"  # a .bin holding word2vec text
    shutil.copy(files["word2vec"], text_bin)
    assert guess_format(text_bin) == "word2vec"
    _refused(text_bin, r"Malformed embedding file .*, line \d+: ", fmt="word2vec-bin")
    with pytest.raises(ValueError, match="unknown vectors format"):
        load_vectors_file(text_bin, fmt="hdf5")


def test_gzip_is_refused_with_the_command(files, tmp_path):
    gz = tmp_path / "ft.vec.gz"
    gz.write_bytes(gzip.compress(files["vec"].read_bytes()))
    _refused(gz, r"gzip-compressed: decompress it first \(gunzip -k")


def test_header_disagreeing_with_rows(tmp_path):
    p = tmp_path / "h.vec"
    p.write_text("2 3\nthe 1 2 3\nof 1 2\n", encoding="utf-8")
    _refused(p, r"line 3\b.*expected 3 values \(as in the header \(line 1\)\) after its word, found 2")
    p.write_text("3 2\nthe 1 2\nof 1 2\n", encoding="utf-8")
    _refused(p, "declares 3 vectors but the file has 2")


def test_non_finite_values_name_word_and_line(tmp_path):
    p = tmp_path / "n.txt"
    p.write_text("the 1 2\nof inf 2\nand 1 2\n", encoding="utf-8")
    _refused(p, r"line 2\b.*non-finite.*'of'")
    b = tmp_path / "n.bin"
    b.write_bytes(b"2 2\nthe " + np.array([1, 2], "<f4").tobytes() + b"of " + np.array([np.nan, 2], "<f4").tobytes())
    _refused(b, r"line 3\b.*non-finite.*'of'")


def test_non_finite_in_gensim_and_fasttext_files(trained, files, tmp_path):
    from gensim.models import KeyedVectors

    vecs = trained.wv.vectors.copy()
    vecs[7, 3] = np.nan
    kv = KeyedVectors(DIM)
    kv.add_vectors(trained.wv.index_to_key, vecs)
    kv.save(str(tmp_path / "nan.kv"))
    _refused(tmp_path / "nan.kv", rf"non-finite.*{re.escape(repr(trained.wv.index_to_key[7]))}", allow_pickle=True)
    # fastText's input matrix: V word rows, then BUCKET n-gram rows; the output matrix (17-byte
    # header + V rows) follows. An inf in a word's row names the word; in a bucket no word uses, the bucket.
    from gensim.models.fasttext import ft_ngram_hashes

    V = len(trained.wv)
    data = files["fasttext-bin"].read_bytes()
    rows_at = len(data) - 17 - 4 * V * DIM - 4 * (V + BUCKET) * DIM
    used = {h for w in trained.wv.index_to_key for h in ft_ngram_hashes(w, 3, 6, BUCKET)}
    unused = min(set(range(BUCKET)) - used)
    for row, match in (
        (5, rf"the vector of {re.escape(repr(trained.wv.index_to_key[5]))}"),
        (V + unused, f"n-gram bucket {unused}"),
    ):
        at = rows_at + 4 * (row * DIM + 2)
        (tmp_path / "inf.bin").write_bytes(data[:at] + np.array([np.inf], "<f4").tobytes() + data[at + 4 :])
        _refused(tmp_path / "inf.bin", rf"non-finite value \(nan/inf\) in {match}")


def test_repeated_words(files, tmp_path):
    p = tmp_path / "r.vec"
    p.write_text("3 2\nthe 1 2\nof 3 4\nthe 5 6\n", encoding="utf-8")
    _refused(p, r"line 4\b.*'the' is repeated \(first at line 2\)")
    b = tmp_path / "r.bin"  # word2vec.c layout, newline after each vector
    row = np.array([1, 2], "<f4").tobytes()
    b.write_bytes(b"2 2\nof " + row + b"\nof " + row + b"\n")
    _refused(b, r"line 3\b.*'of' is repeated")
    # fastText: the dictionary starts at byte 92 (word, NUL, int64 count, int8 type); word 2 renamed to word 1.
    data = files["fasttext-bin"].read_bytes()
    first = data[92 : data.index(b"\0", 92)]
    start2 = 92 + len(first) + 10
    ft = tmp_path / "r-ft.bin"
    ft.write_bytes(data[:start2] + first + data[data.index(b"\0", start2) :])
    _refused(ft, rf"word 2 {re.escape(repr(first.decode()))}.*repeated")


@pytest.mark.parametrize("where", ["dictionary", "input matrix", "output matrix"])
def test_truncated_fasttext_bin_is_refused_not_hung(files, tmp_path, where):
    data = files["fasttext-bin"].read_bytes()  # dictionary ~2 KB, input 147 KB, output 19 KB
    keep = {"dictionary": 300, "input matrix": len(data) // 2, "output matrix": len(data) - 3}[where]
    p = tmp_path / "cut.bin"
    p.write_bytes(data[:keep])
    start = time.perf_counter()
    _refused(p, f"truncated in the {where}")  # gensim alone loops forever on a cut dictionary
    assert time.perf_counter() - start < 5


def test_fasttext_header_checks(files, tmp_path):
    data = bytearray(files["fasttext-bin"].read_bytes())
    sup = data.copy()
    sup[72:76] = struct.pack("<i", 2)  # nlabels: a supervised classifier
    (tmp_path / "sup.bin").write_bytes(bytes(sup))
    _refused(tmp_path / "sup.bin", r"supervised fastText model \(2 labels\)")
    dim = data.copy()
    dim[8:12] = struct.pack("<i", DIM + 1)  # header dim disagrees with the matrix
    (tmp_path / "dim.bin").write_bytes(bytes(dim))
    _refused(tmp_path / "dim.bin", rf"input matrix is \d+ x {DIM}, the header says \d+ x {DIM + 1}")
    (tmp_path / "tail.bin").write_bytes(bytes(data) + b"\0\0")
    _refused(tmp_path / "tail.bin", "2 bytes of unknown data")
    assert check_fasttext_bin(files["fasttext-bin"])["nwords"] == len(_load(files["fasttext-bin"]))


# ---------------------------------------------------------------- pickles: no code from a planted file


class _Planted:
    """Unpickling this runs ``Path.touch(marker)``: the code a planted pickle would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


def test_gensim_files_are_refused_without_opt_in(files):
    for key in ("gensim", "gensim-fasttext", "gensim-model"):
        msg = _refused(files[key], r"pickle.*allow_pickle=True", allow_pickle=False)
        assert "--allow-pickle" in msg and "save_static_dir" in msg and "SaveLoad.load(" not in msg  # issue 27


def test_planted_pickle_never_runs(tmp_path):
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Planted(proof), protocol=4))  # the file is really dangerous ...
    assert proof.exists()
    marker = tmp_path / "pwned"
    planted = tmp_path / "vectors.kv"
    planted.write_bytes(pickle.dumps(_Planted(marker), protocol=4))
    assert guess_format(planted) == "gensim"
    _refused(planted, "allow_pickle=True")  # ... refused by default,
    _refused(planted, r"imports pathlib\.", allow_pickle=True)  # and even with the opt-in
    assert not marker.exists()


def test_a_pickle_planted_beside_a_gensim_file_never_runs(trained, tmp_path):
    """A gensim file that names a sparse matrix saved beside it (``__scipys``) had gensim unpickle that file with no
    restriction, after ours: the planted code ran, and then the load failed."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(trained.wv.vector_size)
    kv.add_vectors(trained.wv.index_to_key[:20], trained.wv.vectors[:20])
    kv.save(str(tmp_path / "v.kv"))
    assert _load(tmp_path / "v.kv").dim == trained.wv.vector_size  # an honest file loads (its arrays beside it)
    stored = pickle.loads((tmp_path / "v.kv").read_bytes())
    stored.__dict__["__scipys"] = ["evil"]
    (tmp_path / "v.kv").write_bytes(pickle.dumps(stored, protocol=4))
    marker = tmp_path / "pwned"
    (tmp_path / "v.kv.evil").write_bytes(pickle.dumps(_Planted(marker), protocol=4))
    (tmp_path / "v.kv.evil.npy").write_bytes(pickle.dumps(_Planted(marker), protocol=4))
    _refused(tmp_path / "v.kv", "sparse matrix saved beside it", allow_pickle=True)
    assert not marker.exists()


def test_pickle_of_something_else(tmp_path):
    p = tmp_path / "d.model"
    p.write_bytes(pickle.dumps({"a": [1, 2]}, protocol=4))
    _refused(p, "Cannot load gensim file", allow_pickle=True)


# ---------------------------------------------------------------- a binary written by Facebook's fastText


def test_real_fasttext_binary_from_gensims_test_data():
    """crime-and-punishment.bin/.vec ship with gensim: written by fastText itself (C++), Cyrillic words."""
    from gensim.models.fasttext import load_facebook_vectors
    from gensim.test.utils import datapath

    path = Path(datapath("crime-and-punishment.bin"))
    kv = load_facebook_vectors(str(path))
    emb = _load(path)
    assert guess_format(path) == "fasttext-bin" and emb.vocab == kv.index_to_key
    # fastText's end-of-sentence token has no n-grams (gensim averages some in): its own row.
    eos = kv.key_to_index["</s>"]
    np.testing.assert_array_equal(emb.vectors.numpy()[eos], kv.vectors_vocab[eos])
    others = np.arange(len(kv)) != eos
    np.testing.assert_array_equal(emb.vectors.numpy()[others], kv.vectors[others])
    unseen = ["landlord", "раздражительный", "Раскольников!", "steamtrain"]
    for w in unseen:
        assert w not in kv.key_to_index and w.lower() not in kv.key_to_index
        np.testing.assert_allclose(emb.word_vector(w), kv[w], rtol=1e-6, atol=1e-7, err_msg=w)
    # fastText's own .vec of the same model: the same words, vectors to its 5-6 printed digits.
    vec = _load(Path(datapath("crime-and-punishment.vec")))
    assert vec.vocab == emb.vocab
    np.testing.assert_allclose(vec.vectors.numpy(), emb.vectors.numpy(), atol=1e-4)
    info = inspect_vectors(path)
    assert (info["vocab_size"], info["dim"]) == (len(emb), emb.dim) and info["fasttext"]["bucket"] == emb.ngrams.bucket


def test_old_gensim_pickles_from_gensims_test_data():
    """gensim 3.x pickles (Python 2 era: _codecs.encode, numpy.random.__RandomState_ctor) pass the
    restricted unpickler and give gensim's own vectors; n-grams that hashes cannot index are refused."""
    from gensim.test.utils import datapath
    from gensim.utils import SaveLoad

    for name in ("model-from-gensim-3.8.0.w2v", "word2vec_3.3"):
        kv = SaveLoad.load(datapath(name)).wv
        emb = load_vectors_file(datapath(name), device="cpu", allow_pickle=True)
        assert emb.vocab == kv.index_to_key
        np.testing.assert_array_equal(emb.vectors.numpy(), kv.vectors)
    # gensim itself raises IndexError for unknown words of this model: 85 n-gram rows, bucket = 100.
    _refused(Path(datapath("compatible-hash-true.model")), r"85 n-gram rows for 100 buckets", allow_pickle=True)
