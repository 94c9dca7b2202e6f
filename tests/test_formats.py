"""Static embedding file formats: round trips, agreement with gensim, clear errors with line numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from models.base import ModelLoadError
from models.formats import FORMATS, guess_format, read_vectors, write_vectors

WORDS = ["the", "Bank", "naïve", "😀", "日本", "a-b", "x" * 300]


@pytest.fixture()
def vectors() -> np.ndarray:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((len(WORDS), 7)).astype(np.float32)
    v[0] = [1e-30, -1e30, 0.0, -0.0, 3.4e38, 1.0, 1.17549435e-38]  # extreme float32 values survive text
    return v


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_is_exact(tmp_path, vectors, fmt):
    path = write_vectors(tmp_path / f"v.{fmt}", WORDS, vectors, fmt)
    words, back = read_vectors(path, fmt)
    assert words == WORDS
    assert back.dtype == np.float32 and back.shape == vectors.shape
    np.testing.assert_array_equal(back, vectors)


@pytest.mark.parametrize("fmt", FORMATS)
def test_gensim_reads_our_files_identically(tmp_path, vectors, fmt):
    from gensim.models import KeyedVectors

    path = write_vectors(tmp_path / f"v.{fmt}", WORDS, vectors, fmt)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=fmt == "word2vec-bin", no_header=fmt == "glove")
    assert kv.index_to_key == WORDS
    np.testing.assert_array_equal(kv.vectors, vectors)


def test_word2vec_c_binary_with_newlines(tmp_path, vectors):
    """word2vec.c writes a newline after every vector; gensim does not. Both must read."""
    blob = f"{len(WORDS)} {vectors.shape[1]}\n".encode()
    for w, v in zip(WORDS, vectors):
        blob += w.encode() + b" " + v.astype("<f4").tobytes() + b"\n"
    (tmp_path / "c.bin").write_bytes(blob)
    words, back = read_vectors(tmp_path / "c.bin")
    assert words == WORDS
    np.testing.assert_array_equal(back, vectors)


def test_guess_format(tmp_path, vectors):
    assert guess_format(write_vectors(tmp_path / "a.bin", WORDS, vectors, "word2vec-bin")) == "word2vec-bin"
    assert guess_format(write_vectors(tmp_path / "a.vec", WORDS, vectors, "vec")) == "vec"
    assert guess_format(write_vectors(tmp_path / "a.txt", WORDS, vectors, "word2vec")) == "word2vec"
    assert guess_format(write_vectors(tmp_path / "g.txt", WORDS, vectors, "glove")) == "glove"
    words, _ = read_vectors(tmp_path / "g.txt")  # sniffed: GloVe has no header
    assert words == WORDS


def _err(path, fmt=None) -> str:
    with pytest.raises(ModelLoadError) as exc:
        read_vectors(path, fmt)
    msg = str(exc.value)
    assert str(path) in msg  # the message names the file
    return msg


def test_text_wrong_number_of_values_names_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("3 2\na 1 2\nb 1 2 3\nc 1 2\n", encoding="utf-8")
    assert re.search(r"line 3\b.*expected 2 values.*found 3", _err(p, "word2vec"))


def test_text_not_a_number_names_line(tmp_path):
    """Named by its place, not quoted: a file named by mistake (or by a visitor of the app's add form, round twelve)
    is not read back to whoever named it ("value 'hunter2pass' is not a number")."""
    p = tmp_path / "bad.vec"
    p.write_text("2 2\na 1 2\nb 1 oops\n", encoding="utf-8")
    assert re.search(r"line 3\b.*value 2 \(field 3\) is not a number", _err(p)) and "oops" not in _err(p)
    p.write_text("a 0.1 0.2\nuser hunter2secretpw\n", encoding="utf-8")
    assert "line 2: expected 2 values (as in line 1) after its word, found 1" in _err(p) and "user" not in _err(p)
    p.write_text("zyxsecret:x:0:0:zyx:/home/zyx:/bin/bash\n", encoding="utf-8")
    assert "zyx" not in _err(p)


def test_text_header_count_too_large(tmp_path):
    p = tmp_path / "short.txt"
    p.write_text("5 2\na 1 2\nb 3 4\n", encoding="utf-8")
    assert "declares 5 vectors but the file has 2" in _err(p, "word2vec")


def test_text_more_lines_than_header(tmp_path):
    p = tmp_path / "long.txt"
    p.write_text("1 2\na 1 2\nb 3 4\n", encoding="utf-8")
    assert re.search(r"line 3\b.*more vectors than the 1 declared", _err(p, "word2vec"))


def test_text_truncated_mid_line(tmp_path, vectors):
    path = write_vectors(tmp_path / "v.vec", WORDS, vectors, "vec")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 25])  # cuts the last line short
    assert re.search(rf"line {len(WORDS) + 1}\b", _err(path))


def test_text_bad_header(tmp_path):
    p = tmp_path / "h.txt"
    p.write_text("two 2\na 1 2\n", encoding="utf-8")
    assert re.search(r"line 1\b.*header", _err(p, "word2vec"))


def test_glove_inconsistent_dimension(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("a 1 2 3\nb 1 2 3\nc 1 2\n", encoding="utf-8")
    assert re.search(r"line 3\b.*expected 3 values", _err(p, "glove"))


def test_invalid_utf8_names_line(tmp_path):
    p = tmp_path / "u.txt"
    p.write_bytes(b"2 2\na 1 2\n\xff\xfe 1 2\n")
    assert re.search(r"line 3\b.*UTF-8", _err(p, "word2vec"))
    # the same bytes on a GloVe file's line 1 were put on the format ("neither a word2vec header … nor a GloVe row")
    p.write_bytes(b"\xff\xfe 1 2\na 1 2\n")
    assert re.search(r"line 1: not valid UTF-8", _err(p, None))


def test_non_finite_value(tmp_path):
    p = tmp_path / "n.txt"
    p.write_text("a 1 nan\n", encoding="utf-8")
    assert re.search(r"line 1\b.*non-finite", _err(p, "glove"))


def test_empty_files(tmp_path):
    (tmp_path / "e.txt").write_bytes(b"")
    _err(tmp_path / "e.txt", "glove")
    (tmp_path / "e.vec").write_bytes(b"")
    _err(tmp_path / "e.vec")
    (tmp_path / "e.bin").write_bytes(b"")
    _err(tmp_path / "e.bin")


def test_binary_truncated_names_entry_line(tmp_path, vectors):
    path = write_vectors(tmp_path / "v.bin", WORDS, vectors, "word2vec-bin")
    data = path.read_bytes()
    # Cut inside the vector of the 4th word: entry 4 is "line" 5 (the header is line 1).
    cut = data.index("😀".encode()) + len("😀".encode()) + 1 + 10
    path.write_bytes(data[:cut])
    msg = _err(path)
    assert re.search(r"line 5\b.*truncated inside the vector", msg)


def test_binary_missing_entries(tmp_path, vectors):
    path = write_vectors(tmp_path / "v.bin", WORDS, vectors, "word2vec-bin")
    data = path.read_bytes().replace(f"{len(WORDS)} 7".encode(), f"{len(WORDS) + 2} 7".encode(), 1)
    path.write_bytes(data)
    assert re.search(rf"line {len(WORDS) + 2}\b.*truncated.*found {len(WORDS)}", _err(path))


def test_binary_trailing_garbage(tmp_path, vectors):
    path = write_vectors(tmp_path / "v.bin", WORDS, vectors, "word2vec-bin")
    path.write_bytes(path.read_bytes() + b"extra 123")
    assert "data after the" in _err(path)


def test_binary_bad_header(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"\x00\x01garbage\n\x00\x00")
    assert re.search(r"line 1\b", _err(p))


def test_missing_file(tmp_path):
    with pytest.raises(ModelLoadError, match="Cannot read"):
        read_vectors(tmp_path / "nope.vec")


@pytest.mark.parametrize("bad", [["a", "a"], ["a b", "c"], ["", "c"], ["a\nb", "c"]])
def test_writer_rejects_unstorable_words(tmp_path, bad):
    with pytest.raises(ValueError):
        write_vectors(tmp_path / "w.txt", bad, np.zeros((2, 3), np.float32), "word2vec")
    assert not (tmp_path / "w.txt").exists()


def test_writer_rejects_bad_shapes(tmp_path):
    with pytest.raises(ValueError):
        write_vectors(tmp_path / "w.txt", ["a", "b"], np.zeros((3, 3), np.float32), "word2vec")
    with pytest.raises(ValueError):
        write_vectors(tmp_path / "w.txt", ["a"], np.full((1, 3), np.nan, np.float32), "glove")
    with pytest.raises(ValueError, match="unknown embedding format"):
        write_vectors(tmp_path / "w.txt", ["a"], np.zeros((1, 3), np.float32), "hdf5")


def test_repeated_word_is_refused_naming_both_lines(tmp_path):
    """A repeated word has no single vector: refused (it used to keep the first one silently)."""
    p = tmp_path / "d.txt"
    p.write_text("a 1 2\nb 3 4\na 5 6\n", encoding="utf-8")
    assert re.search(r"line 3\b.*'a' is repeated \(first at line 1\)", _err(p, "glove"))


def test_a_glove_word_with_spaces_keeps_its_vector(tmp_path):
    """GloVe 840B has rows such as ". . . 0.7 0.8 0.9": it was refused ("after the word '.', found 5")."""
    from models.formats import read_vectors

    path = tmp_path / "glove.txt"
    path.write_text(", 0.1 0.2 0.3\n. . . 0.7 0.8 0.9\nbank 1 2 3\n", encoding="utf-8")
    words, vectors = read_vectors(path, "glove")
    assert words == [",", ". . .", "bank"] and vectors[1].tolist() == pytest.approx([0.7, 0.8, 0.9])
    path.write_text(", 0.1 0.2 0.3\nbank 1 2 3 4\n", encoding="utf-8")  # one number too many is still refused
    with pytest.raises(ModelLoadError, match="line 2: expected 3 values"):
        read_vectors(path, "glove")


def test_a_glove_file_whose_first_word_holds_a_non_breaking_space_is_told_apart_and_sized(tmp_path):
    """The format sniffer and the header reader split line 1 on any whitespace, the parser on the space: a first
    word with a non-breaking space ("new\xa0york") made the file "neither a word2vec header nor a GloVe row"."""
    from models.formats import guess_format, read_header, read_vectors

    path = tmp_path / "vectors.txt"
    path.write_text("new\xa0york 0.1 0.2 0.3\nbank 1 2 3\n", encoding="utf-8")
    assert guess_format(path) == "glove" and read_header(path, "glove") == (2, 3)
    words, vectors = read_vectors(path, "glove")
    assert words == ["new\xa0york", "bank"] and vectors.shape == (2, 3)


@pytest.mark.parametrize("fmt", ["word2vec", "glove"])
def test_a_byte_order_mark_or_tabs_read_as_the_plain_file(tmp_path, vectors, fmt):
    """A file saved with a byte-order mark was "line 2: expected 1 values (as in line 1) after the word 'the',
    found 50" (the header unrecognised, the mark never named); a tab-separated one showed the whole line as "the
    word". Both now read as the plain file does."""
    plain = write_vectors(tmp_path / f"plain.{fmt}.txt", WORDS, vectors, fmt)
    text = plain.read_text(encoding="utf-8")
    bom = tmp_path / f"bom.{fmt}.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    tabs = tmp_path / f"tabs.{fmt}.txt"
    first, *rest = text.splitlines(keepends=True)
    tabs.write_text(
        (first if fmt == "word2vec" else first.replace(" ", "\t")) + "".join(r.replace(" ", "\t") for r in rest)
    )
    for path in (bom, tabs):
        assert guess_format(path) == fmt
        got_words, got = read_vectors(path)
        assert got_words == WORDS and np.array_equal(got, read_vectors(plain)[1]), path
