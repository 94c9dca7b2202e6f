"""The Attention page's bertviz controls under AppTest (``tests/test_app.py``'s ``open_page``) with the real
MiniLM and gpt-small: the line view's focus, threshold and extra heads from and into the URL, the key token
starting over with a new sentence, and the Neurons tab's q/k vectors checked against the attention."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from test_app import assert_ok, open_page, texts

from models.registry import load_embedder

SENTENCE = "The bank raised interest rates, so we walked along the river bank instead."


def _decoded(value):
    """A figure's JSON with plotly's typed arrays ({"dtype", "bdata"}) turned back into lists."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = [int(n) for n in str(value.get("shape", "-1")).split(",")]
        return array.reshape(shape).tolist()
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


def _chart(at, key: str) -> dict:
    """The plotly figure drawn under widget key ``key``."""
    (chart,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    return _decoded(json.loads(chart.proto.spec))


def _lines(fig: dict) -> tuple[list[dict], list[dict]]:
    """(faded or unfocused line traces, the focused token's own line traces) of a line view."""
    lines = [t for t in fig["data"] if t.get("mode") == "lines" and t["x"] != [None]]
    return [t for t in lines if len(t["x"]) != 2], [t for t in lines if len(t["x"]) == 2]


def test_line_view_controls_come_from_the_url_and_go_back_into_it() -> None:
    at = open_page("attention", layer="3", head="2", key="4", focus="key", min_weight="0.1", heads="5")
    assert at.slider(key="attn_min_weight").value == pytest.approx(0.1)
    assert at.segmented_control(key="attn_focus").value == "key" and at.selectbox(key="attn_key").value == 4
    assert at.multiselect(key="attn_more_heads").value == [5]
    fig = _chart(at, "attn_head_plot_lines")
    assert fig["layout"]["title"]["text"] == "Line view, layer 3: H2, H5"
    assert [t["name"] for t in fig["data"] if t.get("showlegend")] == ["head 2", "head 5"]
    _, own = _lines(fig)
    assert own and all(t["y"][1] == -4 for t in own)  # the key's incoming lines, each head's
    att = load_embedder("minilm").embed([at.session_state["attn_query_tokens"]], with_attention=True)[0].attentions
    assert len(own) == int((att[2, [1, 4], :, 4] >= 0.1).sum())  # under 0.1: not drawn
    # Changing the controls writes the URL.
    at.multiselect(key="attn_more_heads").set_value([]).run()
    at.slider(key="attn_min_weight").set_value(0.3).run()
    at.segmented_control(key="attn_focus").set_value("none").run()
    assert_ok(at)
    assert at.query_params["min_weight"] == "0.3" and at.query_params["focus"] == "none"
    assert at.query_params["heads"] in ("", [""])  # emptied: said as ?heads= (absent would mean the default)
    fig = _chart(at, "attn_head_plot_lines")
    assert not fig["layout"]["showlegend"] and not _lines(fig)[1]  # one head, no focus
    drawn = sum(str(t["x"]).count("None") + str(t["x"]).count("nan") for t in _lines(fig)[0])
    assert drawn == int((att[2, 1] >= 0.3).sum())


def test_the_key_token_starts_over_on_the_new_sentences_strongest_link() -> None:
    at = open_page("attention")
    at.selectbox(key="attn_key").set_value(9).run()
    assert at.query_params["key"] == "9"
    at.text_input(key="attn_text").set_value("A dog ran home quickly.").run()
    assert_ok(at)
    words = at.session_state["attn_query_tokens"]
    att = load_embedder("minilm").embed([words], with_attention=True)[0].attentions[1, 0]  # layer 2, head 1
    row = att[0].copy()
    row[0] = -1
    box = at.selectbox(key="attn_key")
    assert box.value == int(np.argmax(row)) and box.proto.set_value  # the browser's box is told
    assert box.options[box.value] == f"{box.value + 1}: {words[box.value]}"


@pytest.mark.parametrize("model,unit", [("minilm", "words"), ("gpt-small", "subword pieces")])
def test_the_neurons_tab_shows_the_pairs_vectors_and_checks_them(model: str, unit: str) -> None:
    at = open_page("attention", model=model, unit=unit, tab="Neurons", layer="2", head="3", query="2", key="1")
    assert_ok(at)
    pair, keys = _chart(at, "attn_neuron_pair"), _chart(at, "attn_neuron_keys")
    heat, bars = pair["data"]
    q, k = np.asarray(heat["z"], float)
    assert np.asarray(bars["y"], float) == pytest.approx(q * k, rel=1e-5, abs=1e-6)
    title = pair["layout"]["title"]["text"]
    dot, score = (float(x) for x in re.search(r"q·k = (-?[\d.]+);  × [\d.e-]+ = score (-?[\d.]+)", title).groups())
    assert dot == pytest.approx(float((q * k).sum()), abs=2e-3) and "weight" in title
    scores = np.asarray(keys["data"][1]["x"], float)
    weights = np.asarray(keys["data"][1]["customdata"], float)
    seen = np.isfinite(scores)
    assert weights[seen] == pytest.approx(np.exp(scores[seen]) / np.exp(scores[seen]).sum(), abs=1e-6)
    marked = int(np.flatnonzero(np.asarray(keys["data"][1]["marker"]["color"]) == "#d62728")[0])
    assert score == pytest.approx(scores[marked], abs=2e-3)
    error = float(re.search(r"attention to within ([\d.e+-]+) on every head", texts(at.caption)).group(1))
    assert error < 1e-4
    if model == "gpt-small":  # a decoder: the keys after the query are blank
        assert not seen[3:].any() and seen[:3].all()
    assert len(at.get("plotly_chart")) == 2  # only the open tab draws


def test_the_neurons_tab_tells_a_models_limit_from_a_fault(monkeypatch) -> None:
    """A model whose attention is not softmax(q·k) gets "No neuron view for this model"; any other error reading
    the vectors is an error box, not that note (a bare ``except ValueError`` dressed a bug as a model's limit)."""
    import app_pages.attention_neurons as neurons
    from models.transformer.qk import QueryKeyError

    def limit(emb, words):
        raise QueryKeyError("rotary position embeddings")

    def fault(emb, words):
        raise ValueError("index 9 is out of bounds")

    monkeypatch.setattr(neurons, "query_key_vectors", limit)
    at = open_page("attention", tab="Neurons", text="Rotary heads have no neuron view.")  # no error box
    assert "No neuron view for this model: rotary position embeddings" in texts(at.info)
    monkeypatch.setattr(neurons, "query_key_vectors", fault)
    with pytest.raises(AssertionError, match="index 9 is out of bounds"):  # open_page finds the page's error box
        open_page("attention", tab="Neurons", text="A bug is not a model limit.")
    assert neurons.scaling_name(0.125, 64) == "1/√64" and neurons.scaling_name(0.0625, 64) == "the model's own scaling"
