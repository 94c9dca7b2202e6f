"""The app's pure logic (viz/): input validation, projections, occurrences, attention summaries, figures.

No Streamlit script runner here; the pages themselves are tested in test_app.py (AppTest) and
test_browser.py (a real Chromium).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from viz.attention import head_entropy, mean_over_heads, strongest_links
from viz.figures import attention_heatmap
from viz.occurrence_figures import occurrence_scatter
from viz.projection import cosine_neighbours, is_degenerate, nn_label_agreement, project
from viz.text import InputError, escape_html, escape_markdown, parse_sentences, tokenize, validate_word

XSS = "<script>alert(1)</script>"


# ----------------------------------------------------------------------------- text


def test_tokenize_words_punctuation_scripts_and_emoji() -> None:
    assert tokenize("The bank's rates rose, didn't they?") == [
        "The",
        "bank",
        "'s",
        "rates",
        "rose",
        ",",
        "didn't",
        "they",
        "?",
    ]
    # RTL words stay whole; Devanagari combining marks stay inside their word.
    assert tokenize("مرحبا بالعالم हिन्दी שלום") == ["مرحبا", "بالعالم", "हिन्दी", "שלום"]
    # An emoji with a skin-tone modifier and a ZWJ family are one token each.
    assert tokenize("ok 👍🏽 👨\u200d👩\u200d👧!") == ["ok", "👍🏽", "👨\u200d👩\u200d👧", "!"]
    # Control characters vanish instead of becoming tokens.
    assert tokenize("a\x00b \x1b c") == ["a", "b", "c"]


@pytest.mark.parametrize("text", [None, "", "   \n\t  ", "\u200b\u200e"])
def test_empty_text_is_a_friendly_input_error(text) -> None:
    with pytest.raises(InputError, match="type"):
        parse_sentences(text)


def test_ten_thousand_word_paste_is_capped_with_a_warning() -> None:
    paste = " ".join(f"w{i}" for i in range(10_000))
    parsed = parse_sentences(paste, one_per_line=False, max_words_per_sentence=40)
    assert [len(s) for s in parsed.sentences] == [40]
    assert parsed.sentences[0][:2] == ["w0", "w1"]
    assert any("cut" in w for w in parsed.warnings)

    many_lines = "\n".join(f"sentence number {i} ." for i in range(500))
    parsed = parse_sentences(many_lines, max_sentences=10, max_total_words=1000)
    assert len(parsed.sentences) == 10 and any("first 10" in w for w in parsed.warnings)

    parsed = parse_sentences(many_lines, max_sentences=500, max_total_words=50)
    assert parsed.num_words <= 50 and any("keep the page fast" in w for w in parsed.warnings)


def test_labels_and_blank_lines() -> None:
    parsed = parse_sentences(
        "The bank closed. | money\n\n  \nWe sat on the bank | river\nNo label here", allow_labels=True
    )
    assert parsed.labels == ["money", "river", None]
    assert parsed.sentences[1] == ["We", "sat", "on", "the", "bank"]


def test_user_html_and_markdown_are_escaped() -> None:
    assert "<" not in escape_html(XSS) and "&lt;script&gt;" in escape_html(XSS)
    md = escape_markdown("**bold** [link](javascript:alert(1)) " + XSS)
    assert "<script>" not in md and "\\*\\*bold\\*\\*" in md and "\\[link\\]" in md


def test_validate_word() -> None:
    assert validate_word("  bank ") == "bank"
    for bad in ("", "   ", "two words", "x" * 51):
        with pytest.raises(InputError):
            validate_word(bad)


# ----------------------------------------------------------------------------- projections


def _clusters(seed: int = 0, n: int = 20, dim: int = 16):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(2, dim)) * 5
    X = np.concatenate([centres[0] + rng.normal(size=(n, dim)) * 0.1, centres[1] + rng.normal(size=(n, dim)) * 0.1])
    return X.astype(np.float32), ["a"] * n + ["b"] * n


@pytest.mark.filterwarnings("ignore:n_jobs value")
@pytest.mark.parametrize("method", ["PCA", "t-SNE", "UMAP"])
def test_projection_shapes_and_separation(method: str) -> None:
    X, labels = _clusters()
    for dims in (2, 3):
        coords, note = project(X, method, dims)
        assert coords.shape == (40, dims) and np.isfinite(coords).all() and note == ""
        # The two clusters stay apart: nearly every point's nearest (Euclidean) projected neighbour has
        # its label (t-SNE in 3-D on 40 points may strand a point or two, a known artefact).
        d = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
        np.fill_diagonal(d, np.inf)
        agree = np.mean([labels[i] == labels[j] for i, j in enumerate(d.argmin(1))])
        assert agree == 1.0 if dims == 2 else agree >= 0.8


def test_projection_edge_cases() -> None:
    same = np.ones((7, 5), np.float32)
    coords, note = project(same, "t-SNE", 2)
    assert is_degenerate(same) and not coords.any() and "same vector" in note
    coords, note = project(np.eye(3, 8, dtype=np.float32), "UMAP", 3)
    assert coords.shape == (3, 3) and "PCA" in note
    assert project(np.zeros((0, 4), np.float32), "PCA")[0].shape == (0, 2)
    with pytest.raises(ValueError, match="Unknown projection"):
        project(same, "LDA")


def test_cosine_neighbours_match_brute_force() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 8)).astype(np.float32)
    nn = cosine_neighbours(X, 4, k=5)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    sims = Xn @ Xn[4]
    expected = [j for j in np.argsort(-sims) if j != 4][:5]
    assert [j for j, _ in nn] == expected
    assert all(abs(s - sims[j]) < 1e-5 for j, s in nn)
    with pytest.raises(IndexError):
        cosine_neighbours(X, 30)


def test_nn_agreement_chance_level_for_identical_points() -> None:
    X = np.ones((4, 3), np.float32)
    # labels a,a,a,b: a random other point shares the label with probability (3*2)/(4*3) = 0.5
    assert nn_label_agreement(X, ["a", "a", "a", "b"]) == pytest.approx(0.5)


# ----------------------------------------------------------------------------- attention


def test_attention_summaries() -> None:
    n = 5
    uniform = np.full((2, 3, n, n), 1 / n, np.float32)
    assert np.allclose(head_entropy(uniform), np.log2(n))
    onehot = np.zeros((1, 1, n, n), np.float32)
    onehot[0, 0, np.arange(n), (np.arange(n) + 1) % n] = 1.0
    assert np.allclose(head_entropy(onehot), 0.0)
    att = np.random.default_rng(0).dirichlet(np.ones(n), size=(2, 3, n)).astype(np.float32)
    assert np.allclose(mean_over_heads(att, 1).sum(-1), 1.0, atol=1e-5)
    assert np.allclose(mean_over_heads(att), att.mean(axis=(0, 1)))
    with pytest.raises(IndexError):
        mean_over_heads(att, 2)
    links = strongest_links(onehot[0, 0], list("abcde"), k=3)
    assert list(links["weight"]) == [1.0, 1.0, 1.0]
    assert all(links["key position"] == links["query position"] % n + 1)


def test_figures_escape_user_text() -> None:
    tokens = ["<b>hi</b>", XSS, "ok"]
    heat = attention_heatmap(np.full((3, 3), 1 / 3, np.float32), tokens)
    blob = json.dumps(heat.to_plotly_json(), default=str)
    assert "<script>" not in blob and "<b>hi" not in blob and "&lt;script&gt;" in blob
    coords = np.random.default_rng(0).normal(size=(3, 2))
    fig = occurrence_scatter(coords, ["<i>g</i>", "g2", "g2"], [XSS + "\nline 2", "a", "b"], highlight=0)
    blob = json.dumps(fig.to_plotly_json(), default=str)
    assert "<script>" not in blob and "<i>g" not in blob and "<br>line 2" in blob
    assert len(fig.data) == 3  # two groups + the highlight ring
    with pytest.raises(ValueError):
        attention_heatmap(np.full((3, 3), 1 / 3, np.float32), tokens[:2])


# ----------------------------------------------------------------------------- polysemy on real SemCor


@pytest.fixture(scope="module")
def semcor():
    from corpora.semcor import load_semcor
    from viz.polysemy import build_lemma_index

    sentences, _ = load_semcor()
    return sentences, build_lemma_index(sentences)


def test_semcor_occurrences_match_the_corpus(semcor) -> None:
    from viz.polysemy import key_pos, semcor_occurrences

    sentences, index = semcor
    direct = [
        (si, ti)
        for si, s in enumerate(sentences)
        for ti, t in enumerate(s.tokens)
        if t.lemma == "bank" and t.sense_keys and t.sense_keys[0].split("%")[1].startswith("1")
    ]
    occs, total = semcor_occurrences(sentences, index, "Bank", pos="noun", cap=1000)
    assert total == len(direct) == len(occs) > 10
    for o, (si, ti) in zip(occs, direct):
        assert o.keys == sentences[si].tokens[ti].sense_keys and key_pos(o.keys[0]) == "noun"
        assert o.target.replace(" ", "_") == sentences[si].tokens[ti].text
        assert f"[{o.target}]" in o.context()
    # Sampling is capped and deterministic.
    a, total_play = semcor_occurrences(sentences, index, "play", cap=25, seed=3)
    b, _ = semcor_occurrences(sentences, index, "play", cap=25, seed=3)
    assert len(a) == 25 < total_play and a == b
    assert semcor_occurrences(sentences, index, "xyzzyq")[0] == []
    with pytest.raises(ValueError):
        semcor_occurrences(sentences, index, "bank", pos="pronoun")


def test_multiword_target_vector_is_mean_of_its_pieces(semcor) -> None:
    """A SemCor multiword token is fed as pieces; its vector is their mean (static GloVe: exact)."""
    from models.registry import load_embedder
    from viz.polysemy import occurrence_vectors, semcor_occurrences

    sentences, index = semcor
    occs, _ = semcor_occurrences(sentences, index, "interest_rate", cap=5)
    assert occs and all(o.end - o.start == 2 for o in occs)
    glove = load_embedder("glove-6b-50d")
    X = occurrence_vectors(lambda sents: [e.vectors for e in glove.embed(sents)], occs)
    assert X.shape == (1, len(occs), 50)
    for i, o in enumerate(occs):
        pieces = o.words[o.start : o.end]
        assert [p.lower() for p in pieces][0] == "interest"
        expected = np.mean([glove.embed([[p]])[0].vectors[0, 0] for p in pieces], axis=0)
        assert np.allclose(X[0, i], expected, atol=1e-6)


def test_typed_occurrences_and_layer_agreement() -> None:
    from viz.polysemy import layer_agreement, typed_occurrences

    parsed = parse_sentences(
        "The bank closed. | money\nBanks lend money | money\nA quiet river bank | river\nNothing here",
        allow_labels=True,
    )
    occs, missing = typed_occurrences(parsed, "bank")
    assert [o.target for o in occs] == ["bank", "Banks", "bank"] and missing == 1
    assert [o.group for o in occs] == ["money", "money", "river"]
    X = np.stack(
        [
            np.array([[1, 0], [1, 0.1], [0, 1]], np.float32),  # layer 0 separates
            np.array([[1, 0], [0, 1], [1, 0.1]], np.float32),
        ]
    )  # layer 1 mixes
    df = layer_agreement(X, [o.group for o in occs])
    assert list(df["1-NN same sense"]) == [pytest.approx(2 / 3), 0.0]
    assert df["chance"].iloc[0] == pytest.approx(2 / 6)
    # three occurrences say little: the interval around 2/3 spans most of [0, 1] and holds the value
    assert list(df["n"]) == [3, 3] and (df["lo"] <= df["1-NN same sense"]).all()
    assert (df["1-NN same sense"] <= df["hi"]).all() and (df["hi"] - df["lo"]).min() > 0.5


def test_polysemy_layer_chart_marks_chance_as_a_baseline_and_draws_intervals() -> None:
    from viz.occurrence_figures import layer_measures_figure
    from viz.polysemy import Occurrence, layer_measures

    rng = np.random.default_rng(0)
    occs = [Occurrence(("w", str(i)), 0, 1, label="ab"[i % 2]) for i in range(40)]
    long = layer_measures(rng.normal(size=(3, 40, 8)).astype(np.float32), occs)
    fig = layer_measures_figure(long)
    by_name = {t.name: t for t in fig.data}
    assert by_name["chance (baseline)"].line.dash == "dash" and by_name["chance (baseline)"].mode == "lines"
    nn = by_name["1-NN same sense"]
    assert nn.error_y.array is not None and len(nn.error_y.array) == 3  # 40 occurrences: bars, not bare points
    assert by_name["self-similarity"].error_y.array is None  # no interval is claimed where none is computed


# ----------------------------------------------------------------------------- zoo and results


def test_model_rows_list_every_registered_model() -> None:
    from models.listing import zoo_frame
    from models.registry import available_models

    df = zoo_frame()
    assert list(df["model"]) == [s.name for s in available_models()]
    assert set(df["status"]) <= {"loaded", "ready", "not trained yet"}
    assert df.set_index("model").loc["glove-6b-50d", "status"] in ("ready", "loaded")


def test_result_tables_from_saved_runs(tmp_path) -> None:
    from probes.registry import get_probe
    from probes.results import ProbeResult, save_result
    from viz.results import (
        baseline_frame,
        best_layer,
        breakdown_frame,
        breakdown_note,
        datasets_of,
        dirs_with_results,
        layer_curves_frame,
        load_dir,
        wide_table,
    )

    save_result(
        ProbeResult(
            "m1",
            "wsd",
            [
                {"dataset": d, "layer": str(j), "metric": "F1", "value": v, "n": n}
                for d, n in (("ALL", 10), ("ALL-noSE07", 7))
                for j, v in enumerate([50, 60, 55])
            ]
            + [
                {"dataset": "ALL", "layer": "mean", "metric": "F1", "value": 58, "n": 10},
                {"dataset": "ALL-noSE07:NOUN", "layer": "1", "metric": "F1", "value": 62, "n": 6},
                {"dataset": "ALL-noSE07:NOUN", "layer": "2", "metric": "F1", "value": 57, "n": 6},
                # a per-POS row on ALL, as runs before 2026-12-06 wrote them: neither a dataset nor a bar
                {"dataset": "ALL:NOUN", "layer": "2", "metric": "F1", "value": 11, "n": 6},
                # the dev set ranks layer 2 first, though ALL w/o SE07 (the set the bars score) would pick layer 1
                {"dataset": "semeval2007", "layer": "1", "metric": "F1", "value": 40, "n": 3},
                {"dataset": "semeval2007", "layer": "2", "metric": "F1", "value": 45, "n": 3},
            ],
        ),
        tmp_path,
    )
    save_result(  # a --limit run of m1 beside its full run: its rows are another slice, never mixed in
        ProbeResult(
            "m1",
            "wsd",
            [
                {"dataset": d, "layer": "0", "metric": "F1", "value": 99, "n": 2}
                for d in ("ALL", "ALL-noSE07:NOUN", "semeval2007")
            ],
            params={"limit": 3},
        ),
        tmp_path,
    )
    save_result(  # a model with no dev-set rows (a user's ALL-only run)
        ProbeResult(
            "m2",
            "wsd",
            [
                {"dataset": d, "layer": str(j), "metric": "F1", "value": v, "n": n}
                for d, n in (("ALL", 10), ("ALL-noSE07", 7))
                for j, v in enumerate([51, 49])
            ]
            + [{"dataset": "ALL-noSE07:NOUN", "layer": str(j), "metric": "F1", "value": 50, "n": 6} for j in range(2)],
        ),
        tmp_path,
    )
    save_result(
        ProbeResult(
            "wordnet-1st-sense",
            "wsd",
            [
                {"dataset": "ALL", "layer": "first-sense", "metric": "F1", "value": 52, "n": 10},
                {"dataset": "ALL-noSE07:NOUN", "layer": "first-sense", "metric": "F1", "value": 54, "n": 6},
            ],
        ),
        tmp_path,
    )
    wsd = get_probe("wsd")
    (tmp_path / "broken.json").write_text("{not json")
    assert dirs_with_results((tmp_path, tmp_path / "missing")) == [tmp_path]
    df = load_dir(tmp_path)
    assert datasets_of(df, wsd) == [
        "ALL",
        "semeval2007",
        "ALL-noSE07",
        "ALL (limit 3)",
        "semeval2007 (limit 3)",
    ]  # the per-POS rows, today's and those on ALL of older runs, are a breakdown, not a dataset
    curves = layer_curves_frame(df, "wsd", "ALL", "F1", exclude=set(wsd.baseline_models))
    m1 = curves[curves["model"] == "m1"]
    assert list(m1["layer"]) == [0, 1, 2] and list(m1["value"]) == [50, 60, 55] and set(curves["model"]) == {"m1", "m2"}
    base = baseline_frame(df, wsd, "ALL", "F1")
    assert list(base["label"]) == ["WordNet 1st sense"] and list(base["value"]) == [52.0]
    assert best_layer(df, "m1", "wsd", "ALL", "F1") == "1"
    assert list(wide_table(df, "wsd", "ALL", "F1").columns) == ["0", "1", "2", "first-sense", "mean"]
    br = breakdown_frame(df, wsd, "F1", "ALL")
    assert list(br["label"]) == ["m1 (layer 2)", "m2 (layer 0)", "WordNet 1st sense"]
    assert list(br["value"]) == [57.0, 50.0, 54.0] and list(br["chosen on"]) == ["semeval2007", "ALL-noSE07", ""]
    sliced = breakdown_frame(df, wsd, "F1", "ALL (limit 3)")
    assert list(sliced["label"]) == ["m1 (layer 0)"] and list(sliced["category"]) == ["NOUN"]
    assert list(sliced["chosen on"]) == ["semeval2007 (limit 3)"] and list(sliced["value"]) == [99.0]
    note = breakdown_note(br, df, wsd, "ALL")
    assert "best on the 3 instances of semeval2007, not at its best on the 7 instances of ALL-noSE07" in note
    assert "No dev-set rows for m2: ALL-noSE07 chose its layer itself, an optimistic pick." in note


def test_user_text_inside_inline_code_is_shown_as_typed() -> None:
    """Markdown's escapes are not read inside backticks: a model name escaped there read "gpt\\-small" in the
    command the corpus search tells users to copy."""
    import re
    from pathlib import Path

    from app_pages.common import code, md

    assert code("python -m features index --model gpt-small") == "`python -m features index --model gpt-small`"
    assert code("a`b") == md("a`b")  # a backtick of its own: escaped plain text instead
    escaped_in_code = re.compile(r"`[^`\n]*\"\s*\+\s*md\(")  # "…`python … " + md(name) + "`"
    pages = Path(__file__).resolve().parent.parent / "app_pages"
    assert [p.name for p in pages.glob("*.py") if escaped_in_code.search(p.read_text(encoding="utf-8"))] == []


def test_a_server_keeps_its_most_recent_quick_runs_not_every_one_ever_made():
    """The quick runs lived in a dict that only grew: every model, probe, size and options run on a server used all
    day stayed in memory for its life. The most recent ``KEPT_RUNS`` are kept; the count of runs ended (the
    estimate's cache key: a run may have filled the feature cache) still grows."""
    from app_pages.probe_quick import KEPT_RUNS, QuickRuns

    runs = QuickRuns()
    for limit in range(KEPT_RUNS + 6):
        runs.put(("glove", "pos", limit, ()), ([], 0.1, "v1"))
    runs.put(("glove", "pos", 10, ()), ([], 0.2, "v1"))  # a run again: now the most recent
    assert len(runs.kept) == KEPT_RUNS and runs.finished == KEPT_RUNS + 7
    assert runs.get(("glove", "pos", 0, ())) is None and runs.get(("glove", "pos", 10, ()))[1] == 0.2
    assert list(runs.kept)[-1] == ("glove", "pos", 10, ()) and runs.get(("glove", "pos", KEPT_RUNS + 5, ()))
