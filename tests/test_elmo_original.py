"""The original ELMo (AllenNLP / bilm-tf files) as a user model, against bilm-tf's own test outputs.

bilm-tf's fixtures (``$EMBPROBE_DATA/bilm_tf_fixtures``, see its README) hold a tiny biLM and the
top-layer outputs TensorFlow computed for 10 batches of 3 sentences run in order with the LSTM
state carried from batch to batch. Stateless mode can only match batch 0; stateful mode all ten.
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from models.base import ModelLoadError
from models.elmo.bilm import ElmoBiLm
from models.elmo.embedder import ElmoEmbedder, find_allennlp_files, inspect_allennlp_elmo, load_allennlp_elmo
from models.elmo.hdf5_io import export_hdf5, lstm_dataset_prefix

TOL = 1e-6  # bilm-tf's and AllenNLP's own tolerance for these fixtures
H = 16  # the fixture model's projection_dim: top layer = [forward (16); backward (16)]


@pytest.fixture(scope="module")
def fixtures(data_root):
    """(folder, batches, expected): batches[i] = the 3 sentences of batch i; expected[i][k] (T, 2H)."""
    folder = data_root / "bilm_tf_fixtures"
    sentences = json.loads((folder / "lm_embeddings_sentences.json").read_text())
    batches = [[sentences[k][i].split() for k in range(3)] for i in range(10)]
    expected = [[None] * 3 for _ in range(10)]
    for k in range(3):
        with h5py.File(folder / f"lm_embeddings_{k}.hdf5", "r") as f:
            for i in range(10):
                fwd_bwd = f[str(i)][...]  # (2, T, H)
                expected[i][k] = np.concatenate([fwd_bwd[0], fwd_bwd[1]], axis=-1)
    return folder, batches, expected


def load_fixture_model(folder, **kwargs) -> ElmoEmbedder:
    return load_allennlp_elmo(folder / "options.json", folder / "lm_weights.hdf5", device="cpu", **kwargs)


def top_layer_errors(emb: ElmoEmbedder, batch, expected_batch) -> tuple[float, float]:
    """Max |ours − TF| of the top layer over the batch's 3 sentences: (forward half, backward half)."""
    out = emb.embed(batch)
    fwd = max(float(np.abs(o.vectors[-1][:, :H] - e[:, :H]).max()) for o, e in zip(out, expected_batch))
    bwd = max(float(np.abs(o.vectors[-1][:, H:] - e[:, H:]).max()) for o, e in zip(out, expected_batch))
    return fwd, bwd


def test_stateless_user_model_matches_batch_0_but_not_the_carried_batches(fixtures):
    folder, batches, expected = fixtures
    emb = load_fixture_model(folder)
    assert not emb.stateful and emb.num_layers == 3 and emb.dim == 2 * H and emb.name == "elmo-original"
    assert max(top_layer_errors(emb, batches[0], expected[0])) <= TOL
    for i in range(1, 10):
        # TF ran these from the states batch i−1 left: zero states give clearly different vectors.
        fwd, bwd = top_layer_errors(emb, batches[i], expected[i])
        assert fwd > 1e-2 and bwd > 1e-2, f"batch {i}: stateless unexpectedly matches the stateful run"
    # stateless: the same sentences give the same vectors whatever ran before
    again = emb.embed(batches[3])
    first = load_fixture_model(folder).embed(batches[3])
    for a, b in zip(again, first):
        np.testing.assert_array_equal(a.vectors, b.vectors)


def test_stateful_reproduces_all_ten_tensorflow_batches(fixtures):
    folder, batches, expected = fixtures
    # max_tokens far below a batch's size: stateful mode must still run each call as ONE batch
    emb = load_fixture_model(folder, stateful=True, max_tokens=8)
    assert emb.stateful
    errors = [top_layer_errors(emb, batches[i], expected[i]) for i in range(10)]
    worst_fwd, worst_bwd = max(e[0] for e in errors), max(e[1] for e in errors)
    assert worst_fwd <= TOL and worst_bwd <= TOL, f"per-batch (forward, backward) max errors: {errors}"


def test_stateful_order_and_reset_states(fixtures):
    folder, batches, expected = fixtures
    emb = load_fixture_model(folder, stateful=True)
    for i in range(3):
        emb.embed(batches[i])
    # without a reset, batch 0 now continues from batch 2's states: no longer TF's batch 0
    assert min(top_layer_errors(emb, batches[0], expected[0])) > 1e-2
    emb.reset_states()
    assert max(top_layer_errors(emb, batches[0], expected[0])) <= TOL
    assert max(top_layer_errors(emb, batches[1], expected[1])) <= TOL
    # rows follow the given order: the same sentences permuted are not the same rows
    emb.reset_states()
    emb.embed(batches[0])
    permuted = emb.embed(batches[1][::-1])
    assert not np.allclose(permuted[0].vectors[-1], expected[1][2], atol=1e-3)
    with pytest.raises(ValueError, match="stateful.*sentence 2 is"):
        emb.embed([["a"], [], ["b"]])
    assert emb.fingerprint() != load_fixture_model(folder).fingerprint()


def test_smaller_batch_keeps_the_states_of_the_rows_it_does_not_run(fixtures):
    """bilm-tf's max_batch_size buffer: row 2 keeps its state through a batch of two rows."""
    folder, batches, expected = fixtures
    emb = load_fixture_model(folder, stateful=True)
    emb.embed(batches[0])
    lstm = emb.bilm.lstm
    row2_h, row2_c = lstm.carried_h[:, :, 2].clone(), lstm.carried_c[:, :, 2].clone()
    emb.embed(batches[1][:2])
    assert lstm.carried_h.shape[2] == 3
    assert torch.equal(lstm.carried_h[:, :, 2], row2_h) and torch.equal(lstm.carried_c[:, :, 2], row2_c)
    assert not torch.equal(lstm.carried_h[:, :, 0], row2_h)


def tiny_options(n_layers: int = 2) -> dict:
    return {
        "lstm": {
            "use_skip_connections": True,
            "projection_dim": 6,
            "cell_clip": 3,
            "proj_clip": 3,
            "dim": 10,
            "n_layers": n_layers,
        },
        "char_cnn": {
            "activation": "relu",
            "filters": [[1, 4], [2, 6], [3, 6]],
            "n_highway": 2,
            "embedding": {"dim": 5},
            "n_characters": 262,
            "max_characters_per_token": 50,
        },
    }


def random_bilm(n_layers: int = 2, seed: int = 0) -> ElmoBiLm:
    """Every parameter random (biases included), so no mapping error can hide."""
    torch.manual_seed(seed)
    bilm = ElmoBiLm(tiny_options(n_layers))
    with torch.no_grad():
        for p in bilm.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
        bilm.char_cnn.char_embedding.weight[0].zero_()
    return bilm.eval()


SENTS = [["The", "bank", "closed", "early", "."], ["Él", "comió", "🍕", "!"], ["x"]]


def test_our_elmo_exported_in_the_original_layout_loads_as_a_user_model(tmp_path):
    bilm = random_bilm()
    export_hdf5(bilm, tmp_path / "plain")
    found = find_allennlp_files(tmp_path / "plain")
    assert found == (tmp_path / "plain" / "options.json", tmp_path / "plain" / "weights.hdf5")
    loaded = load_allennlp_elmo(*found, name="mine", device="cpu")
    in_memory = ElmoEmbedder(bilm, name="mem", source="memory", device="cpu")
    for a, b in zip(loaded.embed(SENTS), in_memory.embed(SENTS)):
        np.testing.assert_allclose(a.vectors, b.vectors, atol=1e-6)

    facts = inspect_allennlp_elmo(*found)
    assert (facts["layers"], facts["dim"]) == (loaded.num_layers, loaded.dim) == (3, 12)
    # hdf5 count = torch parameters minus the mask row torch adds to the char embedding
    n_torch = sum(p.numel() for p in bilm.parameters())
    assert facts["params"] == n_torch - bilm.char_cnn.char_dim
    assert facts["size_bytes"] == sum(f.stat().st_size for f in found)

    # the published naming; the fingerprint follows the contents, not the names
    pub = tmp_path / "published"
    pub.mkdir()
    (pub / "elmo_tiny_options.json").write_bytes(found[0].read_bytes())
    (pub / "elmo_tiny_weights.hdf5").write_bytes(found[1].read_bytes())
    (pub / "README.txt").write_text("not a model file")
    assert find_allennlp_files(pub) == (pub / "elmo_tiny_options.json", pub / "elmo_tiny_weights.hdf5")
    renamed = load_allennlp_elmo(*find_allennlp_files(pub), device="cpu")
    assert renamed.fingerprint() == loaded.fingerprint()
    export_hdf5(random_bilm(seed=1), tmp_path / "other")
    assert (
        load_allennlp_elmo(*find_allennlp_files(tmp_path / "other"), device="cpu").fingerprint() != loaded.fingerprint()
    )

    # not such a folder → None; two candidates → an error naming both
    assert find_allennlp_files(tmp_path / "nope") is None
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "options.json").write_text("{}")
    assert find_allennlp_files(tmp_path / "half") is None
    (pub / "options.json").write_bytes(found[0].read_bytes())
    with pytest.raises(ModelLoadError, match=r"several.*elmo_tiny_options\.json.*options\.json"):
        find_allennlp_files(pub)


def test_refusals_name_the_file(tmp_path):
    options_path, weights_path = export_hdf5(random_bilm(), tmp_path)
    data = weights_path.read_bytes()

    def refused(options, weights, *patterns):
        for call in (load_allennlp_elmo, inspect_allennlp_elmo):  # listing a model refuses it too
            with pytest.raises(ModelLoadError) as info:
                call(options, weights)
            for pattern in patterns:
                assert pattern in str(info.value), f"{call.__name__}: {pattern!r} not in {info.value}"

    trunc = tmp_path / "trunc_weights.hdf5"
    trunc.write_bytes(data[: len(data) // 2])
    refused(options_path, trunc, "trunc_weights.hdf5", "truncated")

    missing = tmp_path / "missing.hdf5"
    missing.write_bytes(data)
    dataset = f"{lstm_dataset_prefix(1, 1)}/B"
    with h5py.File(missing, "a") as f:
        del f[dataset]
    refused(options_path, missing, "missing.hdf5", dataset)

    as_list = tmp_path / "list.json"
    as_list.write_text(json.dumps([tiny_options()]))
    refused(as_list, weights_path, "list.json", "list")
    not_json = tmp_path / "broken.json"
    not_json.write_text('{"lstm": ')
    refused(not_json, weights_path, "broken.json", "invalid JSON")
    lacking = tmp_path / "lacking.json"
    lacking.write_text(json.dumps({"lstm": {"dim": 10}, "char_cnn": tiny_options()["char_cnn"]}))
    refused(lacking, weights_path, "lacking.json", "lstm.projection_dim", "lstm.n_layers")

    wider = tiny_options()
    wider["lstm"]["dim"] = 11
    (tmp_path / "wider.json").write_text(json.dumps(wider))
    refused(tmp_path / "wider.json", weights_path, "weights.hdf5", f"{lstm_dataset_prefix(0, 0)}/W_0", "shape")
    # a 1-layer options file with the 2-layer weights would silently drop a layer
    (tmp_path / "one_layer.json").write_text(json.dumps(tiny_options(n_layers=1)))
    refused(tmp_path / "one_layer.json", weights_path, "weights.hdf5", "do not describe", lstm_dataset_prefix(0, 1))

    refused(tmp_path / "absent.json", weights_path, "absent.json", "not found")
    refused(options_path, tmp_path / "absent.hdf5", "absent.hdf5", "not found")
