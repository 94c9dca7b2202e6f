"""viz/export.py: chart configs and the data behind charts, attention maps and probe runs as bytes."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from viz import export


def test_chart_config_sets_the_modebar_download_format_and_size() -> None:
    cfg = export.chart_config("polysemy bank/minilm", "svg")
    image = cfg["toImageButtonOptions"]
    assert image["format"] == "svg" and image["filename"] == "polysemy_bank_minilm"
    assert (image["width"], image["height"]) == (export.IMAGE_WIDTH, export.IMAGE_HEIGHT)
    assert cfg["displaylogo"] is False and cfg["displayModeBar"] is True
    png = export.chart_config("x", "png", width=None, height=None)["toImageButtonOptions"]
    assert png["scale"] == 2 and "width" not in png and "height" not in png
    with pytest.raises(ValueError, match="not one of svg, png"):
        export.chart_config("x", "gif")


def test_figure_frame_scatter_bar_and_heatmap() -> None:
    fig = go.Figure(
        [
            go.Scatter(
                x=[1.5, 2.5],
                y=[3, 4],
                name="sense A",
                hovertext=["a<br>b", "c"],
                error_y=dict(array=[0.5, 1.0], arrayminus=[0.25, 0.5]),
            ),
            go.Bar(x=["ALL", "SE2"], y=[65.2, 60.1], name="ours"),
            go.Heatmap(z=[[0.9, 0.1], [0.3, 0.7]], x=["the", "bank"], y=["the", "bank"], name="L1 H1"),
        ]
    )
    df = export.figure_frame(fig)
    assert len(df) == 2 + 2 + 4
    scat = df[df["trace"] == "sense A"]
    assert list(scat["x"]) == [1.5, 2.5] and list(scat["hover"]) == ["a | b", "c"]
    assert list(scat["error_minus"]) == [0.25, 0.5]
    cell = df[(df["trace"] == "L1 H1") & (df["y"] == "bank") & (df["x"] == "the")]
    assert float(cell["z"].iloc[0]) == pytest.approx(0.3)
    back = pd.read_csv(io.BytesIO(export.figure_csv(fig)))
    assert len(back) == 8 and set(back["trace"]) == {"sense A", "ours", "L1 H1"}


def test_frame_csv_and_json_round_trip() -> None:
    df = pd.DataFrame({"word": ["bank", "banco"], "x": [0.5, np.nan]})
    assert pd.read_csv(io.BytesIO(export.frame_csv(df)))["word"].tolist() == ["bank", "banco"]
    records = json.loads(export.frame_json(df))
    assert records[1]["x"] is None and records[0]["x"] == 0.5


def test_attention_exports_keep_every_weight_with_its_tokens() -> None:
    rng = np.random.default_rng(0)
    att = rng.random((2, 3, 4, 4)).astype(np.float32)
    att /= att.sum(-1, keepdims=True)
    tokens = ["the", "bank", "<b>", "."]
    df = export.attention_frame(att, tokens)
    assert len(df) == 2 * 3 * 4 * 4
    row = df[(df["layer"] == 2) & (df["head"] == 3) & (df["query position"] == 2) & (df["key position"] == 3)]
    assert row["query"].iloc[0] == "bank" and row["key"].iloc[0] == "<b>"
    assert row["weight"].iloc[0] == pytest.approx(float(att[1, 2, 1, 2]))
    doc = json.loads(export.attention_json(att, tokens, model="minilm"))
    assert doc["tokens"] == tokens and np.allclose(doc["attention"], att, atol=1e-6)
    one = export.attention_frame(att[1, 2], tokens, layers=[2], heads=[3])
    assert set(one["layer"]) == {2} and len(one) == 16
    with pytest.raises(ValueError, match="does not fit 3 tokens"):
        export.attention_frame(att, tokens[:3])


def test_run_record_has_what_reproduces_a_run() -> None:
    from probes.results import ProbeResult

    result = ProbeResult(
        "glove-6b-50d",
        "pos",
        [
            {
                "dataset": "conll2000-test",
                "layer": "0",
                "metric": "accuracy",
                "value": 80.5,
                "n": 200,
                "lo": 75.0,
                "hi": 85.5,
            }
        ],
        dataset="conll2000",
        fingerprint="abc123",
        params={"layers": ["0"], "limit": 5, "seed": 0},
        extra={"data_hash": "d1g3st"},
        command="python -m probes pos --model glove-6b-50d --limit 5",
        timestamp="2026-11-24T00:00:00+00:00",
    )
    rec = json.loads(export.run_record_json([result]))[0]
    assert rec["model"] == "glove-6b-50d" and rec["fingerprint"] == "abc123" and rec["seed"] == 0
    assert rec["layers"] == ["0"] and rec["data"] == {"dataset": "conll2000", "limit": 5, "hash": "d1g3st"}
    assert rec["command"].startswith("python -m probes pos") and rec["rows"][0]["lo"] == 75.0
    assert export.run_record(result, command="x")["command"] == "x"


def test_run_records_of_built_in_datasets_carry_a_data_hash() -> None:
    """The built-in POS and WSD runs record a hash of what they were trained and scored on: the same
    slice gives the same hash, another slice another."""
    from probes.tasks.pos import run_pos_baseline
    from probes.tasks.wsd.probe import run_first_sense

    pos10 = export.run_record(run_pos_baseline(limit=10))["data"]
    assert pos10["hash"] and len(pos10["hash"]) == 16 and pos10["limit"] == 10
    assert export.run_record(run_pos_baseline(limit=10))["data"]["hash"] == pos10["hash"]
    assert export.run_record(run_pos_baseline(limit=12))["data"]["hash"] != pos10["hash"]
    wsd = export.run_record(run_first_sense(limit=5))["data"]
    assert wsd["dataset"] == "semcor→ALL" and len(wsd["hash"]) == 16 and wsd["hash"] != pos10["hash"]


def test_every_csv_writes_counts_as_whole_numbers() -> None:
    """The Polysemy layer chart's CSV said n = "37.0" and the Layer profile's layers = "2.0": the fix for draws and
    seeds (row 87) covered one helper. Every CSV the app writes now keeps layer numbers and counts whole; a count
    column with a fraction, and other numbers, stay as they are."""
    import pandas as pd

    from viz.export import frame_csv

    frame = pd.DataFrame(
        {"layer": [0.0, 1.0], "n": [37.0, 37.0], "layers": [2.0, None], "value": [61.0, 62.5], "clusters": [1.5, 2.0]}
    )
    header, first, second = frame_csv(frame).decode().splitlines()
    assert header == "layer,n,layers,value,clusters"
    assert first == "0,37,2,61.0,1.5" and second == "1,37,,62.5,2.0"
