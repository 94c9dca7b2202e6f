"""ELMo: character ids, every stage's shapes, causality of each LM direction, scalar mix, original
hdf5 layout (round trip + an independent TF-convention check), checkpoints, training, extraction."""

from __future__ import annotations

import json
import math
import re
import shutil
from collections import Counter

import h5py
import numpy as np
import pytest
import torch

from models.base import ModelLoadError
from models.elmo.bilm import Elmo, ElmoBiLm
from models.elmo.char_cnn import Highway
from models.elmo.characters import ElmoCharacterMapper, batch_to_ids
from models.elmo.checkpoint import load_bilm, load_language_model, save_language_model
from models.elmo.embedder import ElmoEmbedder, load_elmo_asset
from models.elmo.hdf5_io import export_hdf5, load_bilm_from_hdf5, lstm_dataset_prefix
from models.elmo.lm import BiLMLanguageModel
from models.elmo.lstm import LstmCellWithProjection, _reverse_padded
from models.registry import get_spec, load_spec

torch.set_num_threads(1)

D, C = 8, 24


def tiny_options(cell_clip=3.0, proj_clip=3.0, n_layers=2, activation="relu"):
    return {
        "lstm": {
            "use_skip_connections": True,
            "projection_dim": D,
            "cell_clip": cell_clip,
            "proj_clip": proj_clip,
            "dim": C,
            "n_layers": n_layers,
        },
        "char_cnn": {
            "activation": activation,
            "filters": [[1, 4], [2, 6], [3, 6]],
            "n_highway": 2,
            "embedding": {"dim": 5},
            "n_characters": 261,
            "max_characters_per_token": 50,
        },
    }


def randomized_bilm(options=None, seed=0) -> ElmoBiLm:
    """A bilm whose every parameter (biases included) is random, so no mapping error can hide."""
    torch.manual_seed(seed)
    bilm = ElmoBiLm(options or tiny_options())
    with torch.no_grad():
        for _name, p in bilm.named_parameters():
            p.copy_(torch.randn_like(p) * 0.5)
        bilm.char_cnn.char_embedding.weight[0].zero_()
    return bilm.eval()


SENTS = [["The", "bank", "closed", "early", "."], ["Él", "comió", "🍕", "!"], ["x"]]


@pytest.fixture(scope="module")
def real_sentences(data_root):
    from corpora.lm_corpus import load_lm_corpus

    corpus = load_lm_corpus(sources=("brown",), max_sentences=300)
    return [s for s in corpus.train if 0 < len(s) <= 40]


# ----------------------------------------------------------------------------- characters
def test_character_ids_follow_allennlp_layout():
    ids = ElmoCharacterMapper.convert_word_to_char_ids("ab")
    assert len(ids) == 50
    # begin-of-word 258, bytes, end-of-word 259, padding 260 — all shifted by +1.
    assert ids[:4] == [259, ord("a") + 1, ord("b") + 1, 260] and set(ids[4:]) == {261}
    bos = ElmoCharacterMapper.convert_word_to_char_ids("<S>")
    eos = ElmoCharacterMapper.convert_word_to_char_ids("</S>")
    assert bos[:3] == [259, 257, 260] and eos[:3] == [259, 258, 260]
    # UTF-8 bytes of an emoji (4 bytes) and truncation of long words to 48 bytes.
    pizza = ElmoCharacterMapper.convert_word_to_char_ids("🍕")
    assert pizza[1:5] == [b + 1 for b in "🍕".encode()] and pizza[5] == 260
    long = ElmoCharacterMapper.convert_word_to_char_ids("x" * 100)
    assert long[1:49] == [ord("x") + 1] * 48 and long[49] == 260
    batch = batch_to_ids([["a", "b", "c"], ["d"], []])
    assert batch.shape == (3, 3, 50)
    assert (batch[1, 1:] == 0).all() and (batch[2] == 0).all() and (batch[0] > 0).all()


# ----------------------------------------------------------------------------- shapes
def test_shapes_of_every_stage():
    bilm = randomized_bilm()
    ids = batch_to_ids(SENTS)  # (3, 5, 50)
    cnn = bilm.char_cnn
    emb = cnn.char_embedding(ids.view(-1, 50)).transpose(1, 2)
    assert emb.shape == (15, 5, 50)
    for (width, num), conv in zip(cnn.filters, cnn.convolutions):
        assert conv(emb).shape == (15, num, 50 - width + 1)
    assert cnn.n_filters == 16
    assert cnn.highways(torch.randn(15, 16)).shape == (15, 16)
    assert cnn(ids).shape == (3, 5, D)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    lstm_out = bilm.lstm(cnn(ids), mask)
    assert lstm_out.shape == (2, 3, 5, 2 * D)
    for layer in bilm.lstm.forward_layers:
        assert layer(torch.randn(3, 5, D), mask.sum(1)).shape == (3, 5, D)
    activations, mask_be = bilm(ids)
    assert activations.shape == (3, 3, 7, 2 * D) and mask_be.shape == (3, 7)
    assert mask_be.sum(1).tolist() == [7, 6, 3]
    layers, m = bilm.layers(ids)
    assert layers.shape == (3, 3, 5, 2 * D) and m.sum(1).tolist() == [5, 4, 1]
    # layer 0 = the token embedding duplicated for both directions; padding is zero everywhere
    assert torch.equal(layers[0, ..., :D], layers[0, ..., D:])
    assert torch.allclose(layers[0, 0, :, :D], cnn(ids)[0], atol=1e-6)
    assert (layers[:, 2, 1:] == 0).all()


def test_options_validation():
    bad = tiny_options(activation="gelu")
    with pytest.raises(ValueError, match="activation"):
        ElmoBiLm(bad)
    with pytest.raises(ValueError, match="options"):
        ElmoBiLm({"lstm": {}})


# ----------------------------------------------------------------------------- causality
@pytest.mark.parametrize("clip", [3.0, None], ids=["clipped-loop", "fused"])
def test_forward_lm_cannot_see_future_and_backward_cannot_see_past(clip):
    bilm = randomized_bilm(tiny_options(cell_clip=clip, proj_clip=clip))
    a = ["the", "cat", "sat", "on", "the", "mat"]
    k = 3
    b = list(a)
    b[k] = "elephant"
    la, _ = bilm.layers(batch_to_ids([a]))
    lb, _ = bilm.layers(batch_to_ids([b]))
    for layer in (1, 2):
        fa, fb = la[layer, 0, :, :D], lb[layer, 0, :, :D]
        ba, bb = la[layer, 0, :, D:], lb[layer, 0, :, D:]
        assert torch.equal(fa[:k], fb[:k]), "forward state saw a future word"
        assert not torch.allclose(fa[k:], fb[k:]), "forward states after the change must differ"
        assert torch.equal(ba[k + 1 :], bb[k + 1 :]), "backward state saw a past word"
        assert not torch.allclose(ba[: k + 1], bb[: k + 1])


def test_fused_kernel_equals_explicit_loop_and_padding_is_ignored():
    torch.manual_seed(1)
    for go_forward in (True, False):
        cell = LstmCellWithProjection(6, 5, 7, go_forward=go_forward).eval()
        x = torch.randn(3, 6, 6)
        lengths = torch.tensor([6, 4, 1])
        fused = cell(x, lengths)
        assert cell.uses_fused_kernel
        loop = cell._loop(x if go_forward else _rev(x, lengths))
        loop = (loop if go_forward else _rev(loop, lengths)) * (torch.arange(6) < lengths[:, None])[..., None]
        assert torch.allclose(fused, loop, atol=1e-6)
        # each sequence alone (no padding) gives the same outputs as in the padded batch
        for i, n in enumerate(lengths.tolist()):
            alone = cell(x[i : i + 1, :n], lengths[i : i + 1])
            assert torch.allclose(alone[0], fused[i, :n], atol=1e-6)
            assert (fused[i, n:] == 0).all()


def _rev(x, lengths):
    return _reverse_padded(x, lengths)


def test_dropout_wraps_the_residual_as_bilm_tf_does():
    """bilm-tf trains with DropoutWrapper(ResidualWrapper(cell)): a layer's residual adds its input as dropped. Ours
    added the undropped input (training only; inference has no dropout). A deterministic stand-in for dropout
    (× 0.5) shows which input each layer and residual gets."""

    class Half(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x

    lstm = randomized_bilm().lstm
    lstm.dropout = Half()
    x, mask = torch.randn(2, 5, D), torch.ones(2, 5, dtype=torch.bool)
    lengths = mask.long().sum(1)
    out = lstm(x, mask)
    first = lstm.forward_layers[0](0.5 * x, lengths)
    second = lstm.forward_layers[1](0.5 * first, lengths) + 0.5 * first
    assert torch.allclose(out[0, ..., :D], first, atol=1e-6) and torch.allclose(out[1, ..., :D], second, atol=1e-6)


def test_cell_clip_bounds_the_projection():
    torch.manual_seed(0)
    cell = LstmCellWithProjection(4, 3, 5, memory_cell_clip_value=0.1, state_projection_clip_value=0.05)
    with torch.no_grad():
        for p in cell.parameters():
            p.mul_(20)
    out = cell(torch.randn(2, 9, 4) * 10, torch.tensor([9, 9]))
    assert out.abs().max() <= 0.05 + 1e-7 and not cell.uses_fused_kernel


# ----------------------------------------------------------------------------- scalar mix
def test_elmo_scalar_mix():
    bilm = randomized_bilm()
    elmo = Elmo(bilm, num_output_representations=2, dropout=0.0).eval()
    ids = batch_to_ids(SENTS)
    out = elmo(ids)
    layers, mask = bilm.layers(ids)
    assert len(out["elmo_representations"]) == 2 and torch.equal(out["mask"], mask)
    mix = elmo.scalar_mixes[0]
    assert torch.isclose(mix.weights.sum(), torch.tensor(1.0))
    # initial weights are uniform: ELMo = γ · mean of the L+1 layers
    assert torch.allclose(out["elmo_representations"][0], layers.mean(0), atol=1e-6)
    with torch.no_grad():
        mix.scalar_parameters.copy_(torch.tensor([0.0, 2.0, -1.0]))
        mix.gamma.fill_(2.0)
    s = torch.softmax(torch.tensor([0.0, 2.0, -1.0]), 0)
    expected = 2.0 * (s[:, None, None, None] * layers).sum(0)
    assert torch.allclose(elmo(ids)["elmo_representations"][0], expected, atol=1e-5)
    assert all(not p.requires_grad for p in elmo.bilm.parameters())
    assert all(p.requires_grad for p in mix.parameters())


# ----------------------------------------------------------------------------- hdf5
def test_elmo_layer_norm_counts_the_boundaries_and_leaves_padding_at_zero():
    """AllenNLP's Elmo mixes the layers with <S> and </S> and strips them afterwards: a layer norm's statistics count
    the boundaries, and padding stays zero. Ours stripped first: padding came out as −mean/std and real words
    differed by up to 0.12 (an outside audit against AllenNLP's source)."""
    from models.elmo.characters import remove_sentence_boundaries
    from models.scalar_mix import _masked_layer_norm

    bilm = randomized_bilm()
    elmo = Elmo(bilm, do_layer_norm=True, dropout=0.0).eval()
    ids = batch_to_ids([["The", "bank", "closed", "."], ["x"]])
    out = elmo(ids)["elmo_representations"][0]
    activations, mask = bilm(ids)
    by_hand = torch.stack([_masked_layer_norm(h, mask) for h in activations]).mean(0)  # uniform weights, γ = 1
    expected, kept = remove_sentence_boundaries(by_hand, mask)
    assert torch.allclose(out, expected, atol=1e-5)
    assert not out[1, 1:].any() and kept.tolist() == [[True] * 4, [True, False, False, False]]


def test_hdf5_round_trip_gives_identical_outputs(tmp_path):
    bilm = randomized_bilm()
    options_path, weights_path = export_hdf5(bilm, tmp_path)
    with h5py.File(weights_path) as f:
        assert f["char_embed"].shape == (261, 5)
        assert f["CNN/W_cnn_2"].shape == (1, 3, 5, 6)
        assert f[f"{lstm_dataset_prefix(1, 1)}/W_0"].shape == (2 * D, 4 * C)
        assert f[f"{lstm_dataset_prefix(0, 0)}/W_P_0"].shape == (C, D)
    loaded = load_bilm_from_hdf5(options_path, weights_path)
    ids = batch_to_ids(SENTS)
    a, _ = bilm.layers(ids)
    b, _ = loaded.layers(ids)
    assert torch.allclose(a, b, atol=1e-6)


def test_hdf5_follows_tensorflow_conventions(tmp_path):
    """Recompute one TF LSTMCell step and one TF highway layer from the raw hdf5 arrays."""
    bilm = randomized_bilm(tiny_options(cell_clip=None, proj_clip=None))
    _, weights_path = export_hdf5(bilm, tmp_path)
    x = np.random.default_rng(0).normal(size=(1, D)).astype(np.float32)
    with h5py.File(weights_path) as f:
        g = f[lstm_dataset_prefix(0, 0)]
        w0, bias, wp = g["W_0"][...], g["B"][...], g["W_P_0"][...]
        hw = {k: f[f"CNN_high_0/{k}"][...] for k in ("W_carry", "b_carry", "W_transform", "b_transform")}
    sig = lambda z: 1 / (1 + np.exp(-z))
    gates = np.concatenate([x, np.zeros((1, D), np.float32)], 1) @ w0 + bias
    i, j, f_, o = np.split(gates, 4, axis=1)
    c = sig(f_ + 1.0) * 0 + sig(i) * np.tanh(j)  # forget_bias=1.0 added at runtime by TF
    h = (sig(o) * np.tanh(c)) @ wp
    ours = bilm.lstm.forward_layers[0](torch.from_numpy(x)[None], torch.tensor([1]))[0, 0].detach().numpy()
    assert np.allclose(ours, h[0], atol=1e-5)
    # TF highway: t = σ(x W_carry + b_carry); y = t ⊙ relu(x W_transform + b_transform) + (1 − t) ⊙ x
    n = bilm.char_cnn.n_filters
    z = np.random.default_rng(1).normal(size=(2, n)).astype(np.float32)
    t = sig(z @ hw["W_carry"] + hw["b_carry"])
    y = t * np.maximum(z @ hw["W_transform"] + hw["b_transform"], 0) + (1 - t) * z
    single = Highway(n, 1)
    with torch.no_grad():
        single.layers[0].load_state_dict(bilm.char_cnn.highways.layers[0].state_dict())
    assert np.allclose(single(torch.from_numpy(z)).detach().numpy(), y, atol=1e-5)


def test_hdf5_errors_name_the_dataset(tmp_path):
    bilm = randomized_bilm()
    options_path, weights_path = export_hdf5(bilm, tmp_path)
    missing = f"{lstm_dataset_prefix(1, 1)}/W_P_0"
    with h5py.File(weights_path, "a") as f:
        del f[missing]
    with pytest.raises(ModelLoadError, match="RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"):
        load_bilm_from_hdf5(options_path, weights_path)
    # wrong shape: options ask for a bigger cell than the file holds
    _, good_weights = export_hdf5(bilm, tmp_path / "good")
    bigger = tiny_options()
    bigger["lstm"]["dim"] = C + 1
    (tmp_path / "bigger.json").write_text(json.dumps(bigger))
    with pytest.raises(ModelLoadError, match=r"RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0.*shape"):
        load_bilm_from_hdf5(tmp_path / "bigger.json", good_weights)
    # truncated file
    data = good_weights.read_bytes()
    trunc = tmp_path / "trunc.hdf5"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="trunc.hdf5"):
        load_bilm_from_hdf5(options_path, trunc)
    with pytest.raises(ModelLoadError, match="not found"):
        load_bilm_from_hdf5(options_path, tmp_path / "nope.hdf5")


# ----------------------------------------------------------------------------- checkpoints
def test_safetensors_checkpoint_round_trip_and_errors(tmp_path):
    lm = BiLMLanguageModel(tiny_options(), vocab_size=40, cutoffs=[10]).eval()
    vocab = ["</S>", "<S>", "<UNK>"] + [f"w{i}" for i in range(37)]
    save_language_model(tmp_path / "m", lm, vocab)
    lm2, vocab2 = load_language_model(tmp_path / "m")
    assert vocab2 == vocab
    ids = batch_to_ids(SENTS)
    words = torch.randint(0, 40, (3, 7))
    assert torch.allclose(lm(ids, words)["loss"], lm2(ids, words)["loss"], atol=1e-6)
    emb = load_elmo_asset("m", assets_dir=tmp_path, device="cpu")
    assert emb.num_layers == 3 and emb.dim == 2 * D
    with pytest.raises(
        ModelLoadError, match="not found in .*Train it with: python -m models train elmo --config small"
    ):
        load_spec(get_spec("elmo-small"), assets_dir=tmp_path / "empty")  # the registry adds the train command
    st = tmp_path / "m" / "model.safetensors"
    st.write_bytes(st.read_bytes()[:100])
    with pytest.raises(ModelLoadError, match="model.safetensors"):
        load_bilm(tmp_path / "m")


# ----------------------------------------------------------------------------- training
def test_a_few_training_steps_lower_the_loss(real_sentences):
    from collections import Counter

    from models.train.elmo_data import BatchEncoder, build_vocab

    counts = Counter(w for s in real_sentences for w in s)
    vocab = build_vocab(counts, 300)
    encoder = BatchEncoder(vocab)
    torch.manual_seed(0)
    lm = BiLMLanguageModel(tiny_options(cell_clip=None, proj_clip=None), len(vocab), cutoffs=[50], dropout=0.0)
    chars, words = encoder(real_sentences[:16])
    opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
    first = lm(chars, words)
    # an untrained model is near-uniform over the vocabulary (both directions)
    assert abs(first["loss"].item() - 2 * math.log(len(vocab))) < 2.0
    losses = []
    for _ in range(15):
        out = lm(chars, words)
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        losses.append(out["loss"].item())
    assert losses[-1] < losses[0] - 1.0


def test_the_backward_lm_predicts_each_word_from_a_state_inside_the_sentence():
    """The backward pairs (state t+1 → word t) were selected by mask[t]: a sentence shorter than the batch added
    "</S>" predicted from the zero state of its padding, one fake target per such sentence, in the loss and in the
    backward perplexity. Both directions now have the same targets: every word, <S> backward and </S> forward."""
    from models.train.elmo_data import BatchEncoder, build_vocab

    vocab = build_vocab(Counter(["a", "b", "c"]), 10)
    chars, words = BatchEncoder(vocab)([["a", "b", "c"], ["a"]])
    lm = BiLMLanguageModel(tiny_options(), len(vocab), cutoffs=[5], dropout=0.0).eval()
    seen = []
    real = lm.softmax.forward

    def spy(states, targets):
        seen.append((states.detach(), targets.tolist()))
        return real(states, targets)

    lm.softmax.forward = spy
    out = lm(chars, words)
    (fwd_states, fwd), (bwd_states, bwd) = seen
    assert len(fwd) == len(bwd) == int(out["num_targets"]) == 4 + 2  # 3 words + </S>, 1 word + </S>
    assert sorted(bwd) == sorted(words[0, :4].tolist() + words[1, :2].tolist())  # <S> and every word, once
    assert (bwd_states.norm(dim=-1) > 0).all()  # no state read from padding


def test_trainer_end_to_end_and_resume(tmp_path, data_root, capsys):
    from models.train.elmo import main

    options = tmp_path / "tiny.json"
    options.write_text(json.dumps(tiny_options(cell_clip=None, proj_clip=None)))
    common = [
        "--config",
        str(options),
        "--max-sentences",
        "150",
        "--vocab-size",
        "200",
        "--batch-tokens",
        "300",
        "--log-every",
        "2",
        "--threads",
        "1",
        "--device",
        "cpu",
        "--out",
        str(tmp_path / "asset"),
        "--run-dir",
        str(tmp_path / "run"),
    ]
    assert main(common + ["--steps", "3"]) == 0
    card = json.loads((tmp_path / "asset" / "model_card.json").read_text())
    assert card["steps"] == 3 and card["family"] == "elmo" and card["dim"] == 2 * D
    assert card["perplexity"]["forward"] > 1 and card["perplexity"]["backward"] > 1
    assert "--steps 3" in card["command"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", card["date"]) and "torch threads" in card["machine"]
    # an option written out at the config's own value is no change (it was refused: "--lr None → 0.002")
    from models.train.elmo_config import CONFIGS

    assert main(common + ["--steps", "5", "--lr", str(CONFIGS["small"]["lr"]), "--resume"]) == 0
    card = json.loads((tmp_path / "asset" / "model_card.json").read_text())
    assert card["steps"] == 5
    # a resume with other data options trained the checkpoint's weights on another corpus slice and vocabulary, and
    # one with no steps left trained none and wrote the model again, exit 0: both refused, the model left as it was
    before = (tmp_path / "asset" / "model_card.json").read_bytes()
    other = [*common[:2], "--max-sentences", "151", *common[4:]]
    assert main(other + ["--steps", "8", "--resume"]) == 2
    assert "trained with other options than this run's (--max-sentences 150 → 151)" in capsys.readouterr().err
    assert main(common + ["--steps", "5", "--resume"]) == 2
    assert "--steps 5: the checkpoint is at step 5 already" in capsys.readouterr().err
    assert (tmp_path / "asset" / "model_card.json").read_bytes() == before
    # stopped after its last step's checkpoint, in the evaluation or the save (no model written): --resume could
    # not finish it ("at step 5 already"), only a retraining or another --steps could (an audit of interrupts)
    shutil.rmtree(tmp_path / "asset")
    assert main(common + ["--steps", "5", "--resume"]) == 0
    assert json.loads((tmp_path / "asset" / "model_card.json").read_text())["steps"] == 5
    emb = load_elmo_asset("asset", assets_dir=tmp_path, device="cpu")
    assert emb.embed([["a", "test"]])[0].vectors.shape == (3, 2, 2 * D)


# ----------------------------------------------------------------------------- extraction
def test_batched_extraction_equals_one_at_a_time(real_sentences):
    emb = ElmoEmbedder(
        randomized_bilm(tiny_options(cell_clip=None, proj_clip=None)),
        name="t",
        source="test",
        device="cpu",
        max_tokens=200,
    )
    sents = real_sentences[:40]
    batched = emb.embed(sents)
    assert len(emb.batches([len(s) for s in sents])) > 1
    for s, out in zip(sents, batched):
        alone = emb.embed([s])[0]
        assert out.words == s and out.vectors.dtype == np.float32
        assert out.vectors.shape == (3, len(s), 2 * D)
        np.testing.assert_allclose(out.vectors, alone.vectors, atol=1e-5)


def test_empty_and_odd_unicode_sentences():
    emb = ElmoEmbedder(randomized_bilm(), name="t", source="test", device="cpu")
    out = emb.embed([[], ["naïve", "日本語", "👍🏽", "\u200b", "a" * 200], ["ok"]])
    assert out[0].vectors.shape == (3, 0, 2 * D)
    assert out[1].vectors.shape == (3, 5, 2 * D) and np.isfinite(out[1].vectors).all()
    assert out[2].vectors.shape == (3, 1, 2 * D)
    with pytest.raises(ValueError, match="no attention"):
        emb.embed([["a"]], with_attention=True)


def test_training_batches_cover_every_piece_once_within_budget(real_sentences):
    from models.train.elmo_data import chop, make_batches

    pieces = chop(real_sentences + [["w"] * 95], max_len=40)
    assert max(len(p) for p in pieces) == 40 and sum(map(len, pieces)) == sum(map(len, real_sentences)) + 95
    for seed in (0, None):
        batches = make_batches(pieces, 400, seed=seed)
        assert sorted(i for b in batches for i in b) == list(range(len(pieces)))
        assert all(len(b) * (max(len(pieces[i]) for i in b) + 2) <= 400 for b in batches)
    assert make_batches(pieces, 400, seed=1) == make_batches(pieces, 400, seed=1)
    assert make_batches(pieces, 400, seed=1) != make_batches(pieces, 400, seed=2)


def test_an_elmo_checkpoint_saved_again_is_the_same_bytes(tmp_path):
    """Equal weights saved again gave files that differed in their safetensors header (two metadata entries, in a
    hash order that changes from one save to the next): another file digest for the same model."""
    from models.elmo.checkpoint import save_bilm

    bilm = randomized_bilm()
    for run in range(8):  # with two entries, 8 equal files by chance: 1 in 128
        save_bilm(tmp_path / str(run), bilm)
    assert len({(tmp_path / str(run) / "model.safetensors").read_bytes() for run in range(8)}) == 1


def test_elmo_in_half_precision_has_its_own_cache_key():
    """ELMo runs in float16 on a GPU (``half_on_cuda``), ±3e-3 from float32, but its cache key left the dtype out:
    features of a half-precision run were served to a float32 one (a shared store, ``half_on_cuda=False``)."""
    from models.elmo.embedder import load_elmo_asset

    emb = load_elmo_asset("elmo-small", device="cpu")
    full = emb.fingerprint()
    emb.dtype = torch.float16  # what ``to("cuda")`` sets with half_on_cuda (no GPU here)
    half = emb.fingerprint()
    emb.to("cpu")
    assert half != full and emb.fingerprint() == full  # float32 keeps its key (the committed runs' fingerprints)


def test_out_of_memory_halves_elmos_budget_and_gives_the_same_vectors(caplog):
    """ELMo had no re-pack on ``torch.OutOfMemoryError`` (the transformer embedder had): one batch too big for the
    GPU ended the run. It now halves the token budget and re-packs what is left; stateless vectors do not depend on
    the batching, so they are the same. A lone sentence that does not fit, or a stateful call, is an error."""
    import logging

    sents = [["the", "bank", "closed", "early"][: 2 + i % 3] + ["."] * (i % 4) for i in range(10)]
    ref = ElmoEmbedder(randomized_bilm(), name="tiny", source="test", max_tokens=64).embed(sents)
    emb = ElmoEmbedder(randomized_bilm(), name="tiny", source="test", max_tokens=64)
    layers, calls = emb.bilm.layers, []

    def failing_once(ids):
        calls.append(ids.shape[0])
        if len(calls) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return layers(ids)

    emb.bilm.layers = failing_once
    with caplog.at_level(logging.WARNING, logger="models.elmo.embedder"):
        out = emb.embed(sents)
    assert emb.max_tokens == 32 and "halved to 32" in caplog.text and len(calls) >= 3
    for o, r in zip(out, ref):
        np.testing.assert_allclose(o.vectors, r.vectors, atol=1e-6)
    emb.bilm.layers = lambda ids: (_ for _ in ()).throw(torch.OutOfMemoryError("CUDA out of memory (simulated)"))
    with pytest.raises(torch.OutOfMemoryError, match="one sentence of 4 words does not fit"):
        emb.embed([["the", "bank", "closed", "early"]])
