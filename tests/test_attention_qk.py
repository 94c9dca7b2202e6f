"""models/transformer/qk.py: the per-head query and key vectors read by forward hooks reproduce the model's own
attention through softmax(q·k/√d + mask), on tiny random BERT / GPT-2 / DistilBERT checkpoints made here and on
the real MiniLM and gpt-small; models whose attention is not that (rotary positions) are refused by name."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import torch

from models.errors import ModelLoadError
from models.registry import load_embedder
from models.tiny import make_tiny_checkpoint
from models.transformer import load_hf_checkpoint, qk as qk_module
from models.transformer.qk import QueryKeyError, query_key_vectors

TEXT = [
    "The bank closed early today , and nobody knew why .",
    "She didn't want unbelievably crowded rooms in the old hotel .",
    "A quick brown fox jumps over the lazy dog near the river bank .",
] * 10
SENTENCE = ["The", "bank", "raised", "interest", "rates", ",", "so", "we", "walked", "along", "the", "river", "bank"]
WORDS = ["The", "quick", "unbelievably", "crowded", "bank", "closed", "."]


def reference_attention(q: np.ndarray, k: np.ndarray, causal: bool) -> np.ndarray:
    """softmax(q·k/√d + mask) over the keys, computed here from the vectors alone: (heads, T, T)."""
    d = q.shape[-1]
    scores = np.einsum("htd,hsd->hts", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(d)
    if causal:
        scores = scores + np.triu(np.full(scores.shape[-2:], -np.inf), 1)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def assert_reproduces(emb, words: list[str], causal: bool) -> None:
    qk = query_key_vectors(emb, words)
    model_att = emb.piece_attention(words).attentions  # the model's own, from a separate forward pass
    L, H = model_att.shape[:2]
    assert qk.queries.shape[:3] == qk.keys.shape[:3] == (L, H, len(qk.pieces)) and qk.causal is causal
    for layer in range(L):
        ours = reference_attention(qk.queries[layer], qk.keys[layer], causal)
        np.testing.assert_allclose(ours, model_att[layer], atol=1e-5)
    assert qk.max_error() < 1e-5
    assert qk.pieces == list(emb.piece_attention(words).pieces)
    words_seen = [w for w in qk.word_ids if w is not None]
    assert sorted(set(words_seen)) == list(range(len(words)))  # every word has its pieces, specials are None


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-qk")
    made = {}

    def make(kind: str, **config_changes):
        key = (kind, *sorted(config_changes.items()))
        if key in made:
            return made[key]
        path = make_tiny_checkpoint(kind, root / f"{kind}{len(config_changes)}", corpus=TEXT, vocab_size=300)
        if config_changes:  # e.g. GPT-2's scale_attn_by_inverse_layer_idx: an extra 1/(layer+1) in the scale
            config = json.loads((path / "config.json").read_text())
            (path / "config.json").write_text(json.dumps({**config, **config_changes}))
        made[key] = load_hf_checkpoint(path, name=f"tiny-{kind}", device="cpu", dtype="fp32")
        return made[key]

    return make


@pytest.mark.parametrize("kind,causal", [("bert", False), ("gpt2", True), ("distilbert", False)])
def test_hooked_queries_and_keys_reproduce_the_models_attention(tiny, kind, causal) -> None:
    emb = tiny(kind)
    assert_reproduces(emb, WORDS, causal)
    qk = query_key_vectors(emb, WORDS)
    if causal:  # a decoder's query sees only itself and what came before
        assert np.isneginf(qk.scores(0, 0)[np.triu_indices(len(qk.pieces), 1)]).all()
        assert np.allclose(np.triu(qk.softmax(0, 0), 1), 0)


def test_the_queries_are_those_of_the_layer_they_are_filed_under(tiny) -> None:
    """BERT: layer l's query vectors are its query projection of layer l's input hidden state."""
    emb = tiny("bert")
    qk = query_key_vectors(emb, WORDS)
    ids = emb._rows([WORDS], whole_only=True)[0][0].ids
    with torch.inference_mode():
        hidden, _ = emb._run([ids], with_attention=False)
        for layer, block in enumerate(emb.model.encoder.layer):
            projected = block.attention.self.query(hidden[layer])[0].numpy()  # (T, H·d)
            H, T, d = qk.queries.shape[1:]
            np.testing.assert_allclose(qk.queries[layer].transpose(1, 0, 2).reshape(T, H * d), projected, atol=1e-5)


def test_gpt2_with_a_per_layer_scale_is_read_with_the_modules_own_scale(tiny) -> None:
    emb = tiny("gpt2", scale_attn_by_inverse_layer_idx=True)
    qk = query_key_vectors(emb, WORDS)
    d = qk.queries.shape[-1]
    assert qk.scale == pytest.approx([d**-0.5 / (layer + 1) for layer in range(len(qk.scale))])
    assert qk.max_error() < 1e-5


def test_the_pair_score_is_the_sum_of_the_elementwise_products(tiny) -> None:
    emb = tiny("bert")
    qk = query_key_vectors(emb, WORDS)
    q, k = qk.queries[1, 0, 2], qk.keys[1, 0, 4]
    assert (q * k).sum() * qk.scale[1] == pytest.approx(qk.scores(1, 0)[2, 4], rel=1e-5)
    assert qk.first_piece(2) == qk.word_ids.index(2) and qk.pieces[0] == "[CLS]"


def test_rotary_models_are_refused_by_their_config_and_by_the_check(tiny, monkeypatch) -> None:
    emb = tiny("llama")
    with pytest.raises(QueryKeyError, match="rotary position embeddings"):
        query_key_vectors(emb, WORDS)
    # Without the config's word, the comparison with the model's attention still refuses it.
    monkeypatch.setattr(qk_module, "position_terms", lambda config: None)
    with pytest.raises(QueryKeyError, match="differs from its attention"):
        query_key_vectors(emb, WORDS)


def test_another_threads_forward_pass_is_not_recorded(tiny, monkeypatch) -> None:
    """The app shares one model between sessions: a hook records only the calling thread's pass."""
    emb = tiny("bert")
    real_run = emb._run
    ran = []

    def run_with_a_neighbour(ids, with_attention):
        out = real_run(ids, with_attention)
        other = emb._rows([["A", "dog", "."]], whole_only=True)[0][0].ids  # after ours: it would overwrite
        t = threading.Thread(target=lambda: ran.append(real_run([other], False)))
        t.start()
        t.join()
        return out

    monkeypatch.setattr(emb, "_run", run_with_a_neighbour)
    qk = query_key_vectors(emb, WORDS)
    assert ran and qk.queries.shape[2] == len(qk.pieces) and qk.max_error() < 1e-5


def test_bad_input_is_a_clear_error(tiny) -> None:
    emb = tiny("bert")
    with pytest.raises(ValueError, match="at least one word"):
        query_key_vectors(emb, [])
    with pytest.raises(ValueError, match="lone surrogate"):
        query_key_vectors(emb, ["bank", "\ud800"])


@pytest.mark.parametrize("name,causal", [("minilm", False), ("gpt-small", True)])
def test_the_real_small_models(name, causal) -> None:
    try:
        emb = load_embedder(name)
    except ModelLoadError as exc:  # gpt-small is trained here; MiniLM comes from its pip package
        pytest.skip(str(exc))
    assert_reproduces(emb, SENTENCE, causal)
