"""Issue 30, bugs 3, 5, 7 and 8: the Reproduce chart, the Attention page, the Models page and uploads.

Figure builders are checked on their figure objects (real committed results, real attention maps);
the pages under AppTest (``tests/test_app.py``'s ``open_page``) with the real small models
(MiniLM, gpt-small) and a temporary model registry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_app import assert_ok, figures, open_page, texts

from viz.attention import line_view, query_key_figure
from viz.figures import attention_heatmap
from viz.reproduce import comparison_figure, comparison_frame, load_tables

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results" / "runs"


# ----------------------------------------------------------------------------- bug 3: Reproduce


def test_reproduce_draws_paper_and_ours_side_by_side_and_the_legend_below_the_plot() -> None:
    """The paper's first sense (65.9) and ours (65.86) were two bars in one overlaid slot, the shorter
    hidden under the longer; the legend sat on the titles (above the plot)."""
    comp = comparison_frame(load_tables(RESULTS))
    wsd = comp[comp["task"].str.startswith("WSD")]
    fig = comparison_figure(wsd, "WSD")
    slots = {}
    for trace in fig.data:
        source = "paper" if trace.name.startswith("paper") else "ours"
        offsets = trace.offset if trace.offset is not None else [None] * len(trace.y)
        widths = trace.width if trace.width is not None else [None] * len(trace.y)
        for system, value, offset, width in zip(trace.y, trace.x, offsets, widths):
            slots[(system, source)] = (value, offset, width)
    paper, ours = slots[("WordNet 1st sense", "paper")], slots[("WordNet 1st sense", "ours")]
    assert (paper[0], round(ours[0], 2)) == (65.9, 65.86)
    assert None not in paper[1:] + ours[1:], "both bars need their own slot"
    (lo1, hi1), (lo2, hi2) = sorted([(paper[1], paper[1] + paper[2]), (ours[1], ours[1] + ours[2])])
    assert hi1 <= lo2 and min(paper[2], ours[2]) >= 0.3  # side by side, neither hidden, each readable
    single = slots[("MFS in SemCor", "ours")]
    assert single[2] >= 0.6  # a system only one source reports keeps a full bar
    # the two half bars' values ("65.9", "65.9") sat one above the other at their bases, touching: the paper's is
    # written past its end (it has no whiskers there), in dark ink
    (paper_trace,) = [t for t in fig.data if t.name.startswith("paper")]
    i = list(paper_trace.y).index("WordNet 1st sense")
    assert paper_trace.textposition[i] == "outside" and paper_trace.textfont.color[i] != "white"
    assert paper_trace.textposition[list(paper_trace.y).index("biLM layer 1")] == "inside"
    legend = fig.layout.legend
    assert legend.yanchor == "top" and legend.y < 0, "the legend goes under the plot, clear of the titles"
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert -legend.y * plot_px >= 40 and fig.layout.margin.b >= -legend.y * plot_px + 20  # under the axis title
    assert len(set(fig.layout.yaxis.categoryarray)) == len(fig.layout.yaxis.categoryarray)


# ----------------------------------------------------------------------------- bug 5: Attention (figures)


def _attention(seed: int, n: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(n, 0.5), size=n).astype(np.float32)


def test_query_key_chart_puts_both_zeros_on_one_line() -> None:
    att = _attention(0)
    for query in range(att.shape[0]):
        fig = query_key_figure(att, list("abcdef"), query)
        (lo, hi), (wlo, whi) = fig.layout.yaxis.range, fig.layout.yaxis2.range
        bars = [t for t in fig.data if t.type == "bar"]
        scores = np.concatenate([np.asarray(t.y, float) for t in bars])
        weights = next(t for t in fig.data if t.name == "attention weight").y
        assert lo <= np.nanmin(scores) and hi >= np.nanmax(scores) and whi >= max(weights)
        # the query's own key is a series of its own: each legend swatch has its bars' colour
        own = next(t for t in bars if t.name == "the query itself")
        assert list(own.x) == [query] and all(t.marker.color != own.marker.color for t in bars if t is not own)
        assert -lo / (hi - lo) == pytest.approx(-wlo / (whi - wlo))  # zero at the same height on both axes
        assert list(fig.layout.yaxis2.tickvals) == [0, 0.25, 0.5, 0.75, 1]  # no negative weights labelled


def test_side_by_side_line_views_and_heatmaps_share_one_scale() -> None:
    from viz.attention import same_scale

    sharp, flat = _attention(1), _attention(2) ** 0.2
    flat = flat / flat.sum(-1, keepdims=True)
    assert flat.max() < sharp.max() / 2
    top = float(sharp.max())

    def colours(fig) -> dict[float, str]:
        return {t.line.width: t.line.color for t in fig.data if t.mode == "lines" and t.hoverinfo == "skip"}

    shared = [colours(line_view(a, list("abcdef"), top=top)) for a in (sharp, flat)]
    for width in set(shared[0]) & set(shared[1]):
        assert shared[0][width] == shared[1][width]  # one weight, one look, whichever panel
    assert max(shared[1]) < max(shared[0])  # the flat head's lines are fainter than the sharp head's
    own = [colours(line_view(a, list("abcdef"))) for a in (sharp, flat)]
    assert max(own[0]) == max(own[1])  # each on its own scale (the old panels): both look "full"
    maps = [attention_heatmap(a, list("abcdef")) for a in (sharp, flat)]
    assert same_scale(maps) == pytest.approx(top)
    assert [(f.data[0].zmin, f.data[0].zmax) for f in maps] == [(0.0, pytest.approx(top))] * 2


# ----------------------------------------------------------------------------- bug 5: Attention (page)


def _chart(at, key: str) -> dict:
    """The plotly figure drawn under widget key ``key``."""
    (chart,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    return json.loads(chart.proto.spec)


def _figure(at, title_part: str) -> dict:
    (fig,) = [f for f in figures(at) if title_part in ((f["layout"].get("title") or {}).get("text") or "")]
    return fig


def test_attention_query_token_starts_over_with_a_new_sentence() -> None:
    """The box kept "4: interest" (the old sentence's token, index 3) while the charts used the new one."""
    at = open_page("attention")
    at.selectbox(key="attn_query").set_value(3).run()
    assert _figure(at, "Query “interest”")
    at.text_input(key="attn_text").set_value("A dog ran home quickly.").run()
    assert_ok(at)
    box = at.selectbox(key="attn_query")
    assert box.value == 0 and box.options[0] == "1: A" and box.proto.set_value  # the browser's box is told
    assert _figure(at, "Query “A”")
    assert at.query_params["query"] == "0"
    at.selectbox(key="attn_query").set_value(2).run()  # a pick in the same sentence stays
    assert at.selectbox(key="attn_query").value == 2 and _figure(at, "Query “ran”")


def test_attention_two_models_side_by_side_and_in_the_averages() -> None:
    at = open_page("attention")
    at.segmented_control(key="attn_compare").set_value("two models").run()
    at.selectbox(key="attn_model_b").set_value("gpt-small").run()
    assert_ok(at)
    side = [_chart(at, "attn_side_a"), _chart(at, "attn_side_b")]
    titles = [f["layout"]["title"]["text"] for f in side]
    assert titles[0].startswith("minilm: layer 2, head 1") and titles[1].startswith("gpt-small: layer 2, head 1")
    assert "One scale for both" in texts(at.caption)
    # Both line views start level: two equal columns holding only their chart (the second head's
    # sliders sat above its chart, pushing it down beside the first).
    panels = [
        c for c in at.columns if any(x.proto.id.endswith(("attn_side_a", "attn_side_b")) for x in c.get("plotly_chart"))
    ]
    assert len(panels) == 2 and {c.weight for c in panels} == {0.5}
    assert all(not c.get("slider") and not c.markdown for c in panels)
    assert len({f["layout"]["height"] for f in side}) == 1
    at.session_state["attn_tab"] = "Averages"
    at.run()
    assert_ok(at)
    heat = [f for f in figures(at) if f["data"][0]["type"] == "heatmap"]
    titles = " ".join(f["layout"]["title"]["text"] for f in heat)
    assert "gpt-small" in titles and "minilm" in titles, titles
    weights = [f for f in heat if "bits" not in json.dumps(f["data"][0].get("colorbar", {}))]
    assert len(weights) == 4 and len({(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in weights}) == 1
    assert re.search(r"One colour scale for every attention map on this tab \(weight 0 to \d", texts(at.caption))


# ----------------------------------------------------------------------------- bug 7: Models page


def _add(at, name: str, ref: str):
    at.text_input(key="models_add_name").set_value(name)
    at.text_input(key="models_add_ref").set_value(ref)
    at.button(key="models_add_submit").click().run()
    assert not at.exception
    return texts(at.error)


def test_models_page_refuses_what_it_cannot_use_and_says_why_in_the_forms_terms(tmp_path, monkeypatch) -> None:
    """Offline, hf:doesnot/exist was "Added" (and written) yet in no picker; an empty name read "could
    not be loaded. Model name ''"; a vectors file of no known format advised a ``fmt`` the form lacks."""
    import huggingface_hub.constants

    registry = tmp_path / "embprobe.toml"
    monkeypatch.setenv("EMBPROBE_MODELS", str(registry))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    at = open_page("models")
    error = _add(at, "ghost", "hf:doesnot/exist")
    assert not at.success and "Not added (nothing was saved): hf:doesnot/exist" in error
    assert "cannot be reached" in error and not registry.exists()
    assert "add-a-model form" in error and "python -m models add NAME" not in error  # not a command-line recipe
    error = _add(at, "", "hf:doesnot/exist")
    assert "could not be loaded" not in error and "Model name ''" not in error and "Name box" in error
    error = _add(at, "x2", "  ")  # the place left empty: it was read as the working directory ".: not a model folder"
    assert "Not added" in error and "a folder, a file or an hf: hub id" in error and ".:" not in error
    error = _add(at, "bad name!", "hf:doesnot/exist")
    assert "could not be loaded" not in error and "Model name 'bad name!'" in error
    junk = tmp_path / "vectors.txt"
    junk.write_text("hello world\nthese are words\n")
    error = _add(at, "junk", str(junk))
    assert "Cannot tell the format of" in error and "fmt" not in error and "GloVe text file" in error
    assert not registry.exists()


def test_models_page_start_here_links_have_room() -> None:
    """Four links in four columns were cut ("How “bank” splits into sen…"): two columns of two."""
    at = open_page("models")
    assert len(at.get("page_link")) == 4
    # two columns of two, stacked in a narrow window (at 1024 px two were still cut: "Which layer knows syntax, which
    # kno"; seen whole in Chromium at 1024 px, 2026-12-06): in the wrapping row, not in fixed columns
    assert not [c for c in at.columns if c.get("page_link")]
    assert "st-key-models_start > div" in "".join(h.proto.body for h in at.get("html"))


# ----------------------------------------------------------------------------- bug 8: uploads and 100 %


def test_lexical_sample_upload_states_the_servers_limit() -> None:
    """The label said ≤ 20 MB while the server refuses files over its maxUploadSize (10 MB)."""
    import tomllib

    with open(Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml", "rb") as fh:
        server_mb = tomllib.load(fh)["server"]["maxUploadSize"]
    at = open_page("polysemy")
    at.segmented_control(key="poly_source").set_value("upload").run()
    (box,) = at.get("file_uploader")
    assert f"≤ {server_mb:g} MB" in box.proto.label and box.proto.max_upload_size_mb == server_mb

    from app_pages.common import MAX_UPLOAD_MB  # the one limit every uploader states and applies

    assert server_mb == MAX_UPLOAD_MB
    # the projector's three uploaders too (its vectors and metadata boxes stated none, and a 50 MB check of its own)
    for source, keys in (
        ("my vectors (TSV)", {"space_pj_vectors", "space_pj_meta"}),
        ("lexical sample (TSV)", {"space_pj_upload"}),
    ):
        at = open_page("embedding_space", tab="Projector", pj_source=source)
        boxes = {b.proto.id.rsplit("-", 1)[-1]: b.proto for b in at.get("file_uploader")}
        assert keys <= set(boxes), boxes.keys()
        for key in keys:
            assert f"≤ {server_mb:g} MB" in boxes[key].label and boxes[key].max_upload_size_mb == server_mb, key


def test_a_malformed_upload_names_the_uploaded_file_not_the_servers_copy(data_root, tmp_path, monkeypatch) -> None:
    from test_app_upload import ewt_bytes

    cache = tmp_path / "cache"
    monkeypatch.setenv("EMBPROBE_CACHE", str(cache))
    at = open_page("probes", tab="Your data")
    at.radio(key="up_task").set_value("tag").run()
    good = ewt_bytes(data_root, "test", 5)
    bad = good.replace(b"\tPROPN\t", b"\t", 1)
    at.file_uploader(key="up_tag_train").upload("good.conllu", good)
    at.file_uploader(key="up_tag_test").upload("my bad file.conllu", bad)
    at.run()
    assert not at.exception
    (err,) = at.error
    line = next(i for i, t in enumerate(bad.decode().splitlines(), 1) if t.count("\t") == 8)
    message = texts([err])
    assert f"my bad file.conllu:{line}: expected 10 tab-separated fields" in message
    assert str(cache) not in message and "uploads" not in message and "my_bad_file" not in message


def test_a_point_at_100_percent_is_drawn_whole() -> None:
    from viz.probe_figures import layer_probe_figure, task_vs_control_figure

    curves = pd.DataFrame({"model": "m", "layer": [0, 1, 2], "value": [92.0, 100.0, 97.5], "n": 40})
    for fig in (
        layer_probe_figure(curves, None, title="t"),
        task_vs_control_figure(curves, curves.assign(value=[60.0, 70.0, 65.0]), metric="accuracy", title="t"),
    ):
        top = fig.layout.yaxis.range[1]
        assert top >= 100
        reach = [t for t in fig.data if t.mode == "lines+markers" and max(t.y) >= 100]
        assert reach and all(t.cliponaxis is False for t in reach), "a 100 % marker is cut by the plot's edge"
