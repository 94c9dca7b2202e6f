"""Issue 33, ELMo: character ids for a whole batch without a Python loop per word, and the fused
LSTM's weights flattened once into one buffer (cuDNN's layout) after loading or moving, never per call.

No GPU here: the flattening is checked through its plumbing with a CPU stand-in for cuDNN's
flatten op (``torch._cudnn_rnn_flatten_weight``: one buffer, the weights ``set_`` to views of it);
the cuDNN warning itself is the GPU script's check (``models/elmo/lstm.py`` module doc).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from models.elmo import lstm as lstm_module
from models.elmo.characters import ElmoCharacterMapper, batch_to_ids
from models.elmo.embedder import load_elmo_asset

EDGE_WORDS = [
    "",
    "<S>",
    "</S>",
    "<s>",
    "<S>>",
    "</S",
    "<S\ud800>",  # a lone surrogate dropped by "ignore" leaves the bytes of <S>: still an ordinary word
    "x" * 48,
    "x" * 49,
    "x" * 200,
    "é" * 24,
    "é" * 25,  # 50 bytes: cut after 48, inside no character
    "a" + "é" * 24,  # 49 bytes: cut inside the last é
    "🍕",
    "🍕" * 13,
    "漢字かな",
    "\ud83d\ude00",  # a surrogate pair in a str is two lone surrogates: both dropped
    "a\udfffb",
    "\x00",
    "\x7f\x80\u07ff\u0800\uffff\U00010000\U0010ffff",
]


def reference_ids(sentences: list[list[str]]) -> np.ndarray:
    """The per-word mapper, word by word (what batch_to_ids did before)."""
    ids = np.zeros((len(sentences), max(map(len, sentences), default=0), 50), np.int64)
    for b, sentence in enumerate(sentences):
        for t, word in enumerate(sentence):
            ids[b, t] = ElmoCharacterMapper.convert_word_to_char_ids(word)
    return ids


@pytest.fixture(scope="module")
def semcor_sentences(data_root) -> list[list[str]]:
    from corpora.semcor import load_semcor

    sentences, _ = load_semcor(("brown1",))
    return [s.words for s in sentences[:2000]]


def test_batch_ids_equal_the_per_word_mapper_on_semcor_and_edge_cases(semcor_sentences):
    sentences = [*semcor_sentences, EDGE_WORDS, [], ["<S>", "a", "</S>"], EDGE_WORDS[::-1]]
    ids = batch_to_ids(sentences)
    assert ids.dtype == torch.long
    np.testing.assert_array_equal(ids.numpy(), reference_ids(sentences))
    assert len(set(itertools.chain.from_iterable(semcor_sentences))) > 5000  # a real vocabulary was compared


@pytest.mark.parametrize("sentences", [[], [[]], [[], []], [[], ["a"], []], [["🍕"] * 3]])
def test_batch_ids_of_empty_and_padded_batches(sentences):
    ids = batch_to_ids(sentences)
    assert ids.shape == (len(sentences), max(map(len, sentences), default=0), 50)
    np.testing.assert_array_equal(ids.numpy(), reference_ids(sentences))


def test_the_embedder_never_maps_word_by_word(monkeypatch):
    sentences = [["The", "bank", "closed", "."], ["Él", "comió", "🍕", "!", "x" * 60], ["<S>"]]
    expected = [e.vectors for e in load_elmo_asset(device="cpu").embed(sentences)]

    def one_word(cls, word):
        raise AssertionError(f"per-word character mapping of {word!r}")

    monkeypatch.setattr(ElmoCharacterMapper, "convert_word_to_char_ids", classmethod(one_word))
    for got, want in zip(load_elmo_asset(device="cpu").embed(sentences), expected):
        np.testing.assert_array_equal(got.vectors, want)


@pytest.fixture()
def cpu_flatten(monkeypatch):
    """cuDNN's flatten on CPU: one new buffer, each weight copied in and ``set_`` to its view. Returns the calls."""
    calls: list[list[torch.Tensor]] = []

    def flatten(weights, *_layout):
        calls.append(list(weights))
        buffer = torch.cat([w.detach().reshape(-1) for w in weights])
        offset = 0
        for w in weights:
            w.set_(buffer.untyped_storage(), offset, w.shape)
            offset += w.numel()
        return buffer

    monkeypatch.setattr(lstm_module, "_cudnn_flattenable", lambda weights: True)
    monkeypatch.setattr(lstm_module.cudnn_rnn, "get_cudnn_mode", lambda mode: 2)  # CUDNN_LSTM; no cuDNN here
    monkeypatch.setattr(torch, "_cudnn_rnn_flatten_weight", flatten)
    return calls


def cells(emb):
    return [*emb.bilm.lstm.forward_layers, *emb.bilm.lstm.backward_layers]


def assert_one_buffer(cell):
    weights = cell.fused_weights()
    storage = weights[0].untyped_storage()
    assert all(w.untyped_storage().data_ptr() == storage.data_ptr() for w in weights)
    assert sum(w.numel() * w.element_size() for w in weights) == storage.nbytes()


def test_fused_weights_are_flattened_once_per_move_and_stay_flat(request, monkeypatch):
    sentences = [["The", "bank", "closed", "early", "."], ["x"]]
    plain = [e.vectors for e in load_elmo_asset(device="cpu", max_tokens=8).embed(sentences)]  # never flattened
    calls = request.getfixturevalue("cpu_flatten")

    emb = load_elmo_asset(device="cpu", max_tokens=8)  # several batches: several fused calls per cell
    assert all(c.uses_fused_kernel for c in cells(emb))
    calls.clear()
    emb.to("cpu")
    assert len(calls) == len(cells(emb))  # once per cell and move
    for cell in cells(emb):
        assert_one_buffer(cell)

    seen: list[list[torch.Tensor]] = []
    real_lstm = torch.lstm

    def lstm(x, hx, params, *args):
        seen.append(list(params))
        return real_lstm(x, hx, params, *args)

    monkeypatch.setattr(torch, "lstm", lstm)
    calls.clear()
    for got, want in zip(emb.embed(sentences), plain):
        np.testing.assert_array_equal(got.vectors, want)  # the flat weights hold the same numbers
    assert not calls  # never per call
    flat = {w.data_ptr() for c in cells(emb) for w in c.fused_weights()}
    assert len(seen) > len(cells(emb)) and all(p.data_ptr() in flat for params in seen for p in params)

    emb.bilm.to(torch.float64)  # a dtype change: new storage, flattened again
    assert len(calls) == len(cells(emb))
    for cell in cells(emb):
        assert cell.input_linearity.weight.dtype == torch.float64
        assert_one_buffer(cell)
    emb.to("cpu")  # back to float32
    emb._redraw_weights(7)  # new numbers copied in place: still one buffer
    for cell in cells(emb):
        assert_one_buffer(cell)
    redrawn = load_elmo_asset(device="cpu", max_tokens=8)
    redrawn._redraw_weights(7)
    for got, want in zip(emb.embed(sentences), redrawn.embed(sentences)):
        np.testing.assert_array_equal(got.vectors, want.vectors)
