"""The pure logic behind the Polysemy explorer and the Embedding space (no streamlit): collapsed points,
metadata colours, search, the projector's uploads, figures, projections of all layers, corpus search."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from features import FeatureCacheError
from viz import points
from viz.corpus_search import corpus_index, corpus_vectors, hits_frame, nearest, rows_vectors, same_sense_share
from viz.occurrence_figures import MIXED, occurrence_scatter
from viz.points import collapse, colour_groups, genre_of, occurrence_metadata, search_mask
from viz.polysemy import Occurrence, separability_problem
from viz.projection import project, project_layers
from viz.projector import parse_metadata, parse_vectors, stack_layers
from viz.space import token_table
from viz.text import InputError


def test_collapse_finds_identical_vectors_up_to_float_noise() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=50), rng.normal(size=50)
    X = np.stack([a, b, a + 1e-7, a, b - 2e-8])
    rep, inverse = collapse(X)
    assert list(rep) == [0, 1] and list(inverse) == [0, 1, 0, 0, 1]
    rep, inverse = collapse(rng.normal(size=(6, 8)))
    assert list(inverse) == list(range(6))
    # copies whose coordinates straddle a rounding boundary (x.xxxxx5 ± noise) are still one point: two pasted
    # sentences, 30 copies each, were drawn as four groups
    edge = np.array([1.0, 0.123455, 0.5, -0.25])  # scale 1: the second coordinate sits on a rounding boundary
    tip = np.array([0.0, 1e-9, 0.0, 0.0])
    copies = np.stack([edge + tip, edge - tip, -edge, edge + 2 * tip, -edge - tip])
    rep, inverse = collapse(copies)
    assert list(rep) == [0, 2] and list(inverse) == [0, 0, 1, 0, 1]
    # but points each within the tolerance of the next never chain into one (200 steps of 1.3e-5 were one point)
    chain = np.zeros((200, 2))
    chain[:, 0], chain[0, 1] = np.arange(200) * 1.3e-5, 1.0
    rep, inverse = collapse(chain)
    spans = [np.ptp(chain[inverse == k, 0]) for k in range(len(rep))]
    assert len(rep) > 50 and max(spans) <= 2 * np.sqrt(2) * 1e-5


def test_static_occurrences_are_one_marker_each_with_counts_on_a_sane_scale() -> None:
    X = np.stack([np.ones(5)] * 4 + [np.arange(5.0)] * 2)
    rep, inverse = collapse(X)
    coords, _ = project(X[rep], "PCA", 2)
    fig = occurrence_scatter(
        coords[inverse], ["money", "money", "river", "river", "money", "money"], ["h"] * 6, inverse=inverse, highlight=2
    )
    points = [tr for tr in fig.data if tr.name != "selected"]
    assert sum(len(tr.x) for tr in points) == 2  # two distinct vectors, two markers
    assert sorted(t for tr in points for t in tr.text) == ["×2", "×4"]
    # bare axes at one scale: an axis stretched to its own spread drew float noise as distance
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    assert {tr.name.split(" (")[0] for tr in points} == {MIXED, "money"}  # 4 mixed, 2 of one sense
    # One distinct vector: a fixed frame, not an axis scaled to float noise.
    same = np.zeros((5, 2))
    fig = occurrence_scatter(same, ["a"] * 5, ["h"] * 5, inverse=np.zeros(5, int))
    assert list(fig.layout.xaxis.range) == [-1, 1]


@pytest.mark.parametrize("dims", [2, 3])
def test_the_selected_ring_is_opaque_with_a_legend_swatch(dims: int) -> None:
    coords = np.random.default_rng(1).normal(size=(8, dims))
    fig = occurrence_scatter(coords, list("aabbaabb"), ["h"] * 8, highlight=3)
    ring = [tr for tr in fig.data if tr.name == "selected"]
    assert len(ring) == 1 and ring[0].showlegend
    assert ring[0].marker.color == "black" and ring[0].marker.symbol == "circle-open"
    assert list(ring[0].x) == [coords[3, 0]]


def test_search_emphasises_and_isolates_matches() -> None:
    meta = pd.DataFrame({"sense": ["river", "money", "river side", "money"], "context": ["a", "b", "c", "RIVER"]})
    assert list(search_mask(meta, "river")) == [True, False, True, True]
    assert list(search_mask(meta, "re:^money$", columns=["sense"])) == [False, True, False, True]
    assert not search_mask(meta, "  ").any()
    with pytest.raises(InputError, match="regular expression"):
        search_mask(meta, "re:(")
    with pytest.raises(InputError, match="characters"):
        search_mask(meta, "x" * 500)
    coords = np.arange(8.0).reshape(4, 2)
    fig = occurrence_scatter(coords, list(meta["sense"]), ["h"] * 4, matched=search_mask(meta, "money"), isolate=True)
    assert sum(len(tr.x) for tr in fig.data) == 2


def test_a_catastrophic_pattern_is_refused_in_its_time_budget_not_run_for_ever() -> None:
    """``re`` ran a link's ``re:`` pattern with no time limit while holding the interpreter's lock: nested repeats
    over SemCor's sentences froze every session of the server (killed after 200 s)."""
    meta = pd.DataFrame({"context": ["a" * 40 + "c"] * 50, "word": ["bank"] * 50})
    start = time.monotonic()
    with pytest.raises(InputError, match=r"takes more than 2 s"):
        search_mask(meta, "re:((a|aa)+)+b")
    assert time.monotonic() - start < 3 * points.SEARCH_SECONDS
    assert search_mask(meta, r"re:^a+c$").all() and search_mask(meta, r"re:(.|.)*!").sum() == 0  # fast ones still run


def test_colour_groups_bin_numbers_and_pool_rare_values() -> None:
    meta = pd.DataFrame({"sentence length": list(range(5, 65)), "genre": [f"g{i % 20}" for i in range(60)]})
    bins = colour_groups(meta, "sentence length")
    assert 2 <= len(set(bins)) <= 6 and bins[0].startswith("sentence length 5")
    # the ranges do not share their ends (the projector's rank legend read "1760–3486 | 3486–5227"), and every value
    # sits in the range its label names
    ranks = pd.DataFrame({"rank": np.arange(1, 10_001)})
    groups = colour_groups(ranks, "rank")
    spans = {g: tuple(map(int, g.split()[1].split("–"))) for g in dict.fromkeys(groups)}
    ends = sorted(spans.values())
    assert (
        all(hi < next_lo for (_, hi), (next_lo, _) in zip(ends, ends[1:])) and ends[0][0] == 1 and ends[-1][1] == 10_000
    )
    assert all(spans[g][0] <= r <= spans[g][1] for g, r in zip(groups, ranks["rank"]))
    layers = colour_groups(pd.DataFrame({"layer": [0, 1, 2, 3, 4, 5, 6] * 40}), "layer")  # issue 30, bug 4
    assert len(set(layers)) == 7 and layers[:2] == ["layer 0", "layer 1"]
    genres = colour_groups(meta, "genre", max_groups=5)
    assert len(set(genres)) == 5 and any(g.startswith("other (") for g in genres)
    with pytest.raises(InputError):
        colour_groups(meta, "nope")


def test_occurrence_metadata_and_genres() -> None:
    occ = Occurrence(("the", "bank", "rose"), 1, 2, keys=("bank%1:14:00::",), source="brown1/br-a01 s3")
    meta = occurrence_metadata([occ], lambda g: f"<{g}>")
    assert meta.iloc[0].to_dict() | {"context": ""} == {
        "sense": "<bank%1:14:00::>",
        "POS": "noun",
        "genre": "press: reportage",
        "sentence length": 3,
        "source": "brown1/br-a01 s3",
        "context": "",
        "sense key": "bank%1:14:00::",  # in full, for a CSV to be joined on (the sense column is a name)
    }
    assert genre_of("typed line 2") == "" and genre_of("brown2/br-r07 s1") == "humor"


def test_separability_problem_explains_a_curve_that_could_only_be_zero() -> None:
    assert "single occurrence" in separability_problem(["a", "b", "c"])
    assert "Only one sense" in separability_problem(["a", "a", None])
    assert separability_problem(["a", "a", "b"]) is None


def test_projections_of_all_layers_at_once_match_one_by_one() -> None:
    X = np.random.default_rng(2).normal(size=(3, 12, 16)).astype(np.float32)
    coords, notes = project_layers(X, "PCA", 2)
    assert coords.shape == (3, 12, 2) and notes == ["", "", ""]
    for j in range(3):
        np.testing.assert_allclose(coords[j], project(X[j], "PCA", 2)[0], atol=1e-5)
    X[0, 5:] = X[0, 0]  # a layer where 7 rows share one vector
    inverses = [collapse(X[j])[1] for j in range(3)]
    coords, _ = project_layers(X, "PCA", 2, distinct=inverses)
    assert np.allclose(coords[0, 5:], coords[0, 0])


def test_projector_uploads_parse_or_name_the_bad_line() -> None:
    X = parse_vectors(b"0.1\t0.2\t0.3\n1 2 3\n\n4,5,6\n")
    assert X.shape == (3, 3) and X.dtype == np.float32
    with pytest.raises(InputError, match="line 2 has 2 numbers"):
        parse_vectors("1\t2\t3\n1\t2\n")
    with pytest.raises(InputError, match="line 1: “abc” is not a number"):
        parse_vectors("abc\t1\n")
    with pytest.raises(InputError, match="NaN"):
        parse_vectors("nan\t1\n1\t2\n")
    with pytest.raises(InputError, match="not UTF-8"):
        parse_vectors(b"\xff\xfe1\t2\n")
    # as the Probes page's uploads say it (it said "byte 2", an offset, where they say the byte and its column)
    with pytest.raises(InputError, match=r"line 2: not UTF-8 text \(byte 0xa4 at column 3\)"):
        parse_vectors(b"1\t2\n3\t\xa4\n")
    meta = parse_metadata("word\tfreq\nbank\t10\nriver\t3\nmoney\t7\n", 3)
    assert list(meta.columns) == ["word", "freq"] and meta["freq"].dtype.kind in "if"
    assert list(parse_metadata("bank\nriver\n", 2)["label"]) == ["bank", "river"]
    with pytest.raises(InputError, match="2 rows .* 3 vectors"):
        parse_metadata("a\nb\n", 3)
    pts, stacked = stack_layers(np.zeros((2, 3, 4)), pd.DataFrame({"w": ["a", "b", "c"]}))
    assert pts.shape == (6, 4) and list(stacked["layer"]) == [0, 0, 0, 1, 1, 1]


def test_a_metadata_file_with_more_columns_than_choices_is_refused_at_once() -> None:
    """A 1 MB header of 100,000 columns took 98 s a page run (each column converted in turn, then a colour-by choice
    each); a 10 MB upload would have taken hours."""
    import time

    from viz.projector import MAX_COLUMNS

    header = "\t".join(f"c{i}" for i in range(100_000))
    row = "\t".join("1" for _ in range(100_000))
    start = time.perf_counter()
    with pytest.raises(InputError, match=f"100,000 columns; at most {MAX_COLUMNS}"):
        parse_metadata(f"{header}\n{row}\n{row}\n", 2)
    assert time.perf_counter() - start < 1.0
    wide = parse_metadata("\t".join(f"c{i}" for i in range(MAX_COLUMNS)) + "\n" + "\t".join(["2"] * MAX_COLUMNS), 1)
    assert wide.shape == (1, MAX_COLUMNS) and wide["c0"].dtype.kind in "if"


def test_typed_tokens_leave_punctuation_out() -> None:
    outs = [{"words": ["The", "bank", ",", "rose", "."], "vectors": np.random.default_rng(3).normal(size=(2, 5, 4))}]
    table = token_table(outs, 1)
    assert list(table.rows["token"]) == ["The", "bank", "rose"]
    np.testing.assert_allclose(table.vectors[2], outs[0]["vectors"][1, 3])


def test_nearest_is_exact_cosine_ranking_without_the_query_itself() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 10)).astype(np.float32)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    hits = nearest(Xn, X[7] * 3.0, k=5, exclude=7)
    sims = Xn @ Xn[7]
    sims[7] = -np.inf
    assert [r for r, _ in hits] == list(np.argsort(-sims)[:5])
    assert all(a >= b for (_, a), (_, b) in zip(hits, hits[1:]))
    with pytest.raises(ValueError, match="zero"):
        nearest(Xn, np.zeros(10), k=3)
    with pytest.raises(ValueError, match="dimensions"):
        nearest(Xn, np.ones(4), k=3)


def test_corpus_index_rows_follow_the_wsd_probes_semcor_view() -> None:
    """Row r of the corpus matrix is token r of the WSD probe's SemCor layout: same count, same senses."""
    from corpora.semcor import load_semcor
    from probes.tasks.wsd.data import semcor_view

    sentences, _ = load_semcor()
    index = corpus_index(sentences)
    layout, _keep, keys, _n = semcor_view(None)
    assert len(index) == len(layout.starts) == keys.num_tokens
    first_key = {}
    for t, s in zip(keys.token, keys.sense):
        first_key.setdefault(int(t), keys.keys[int(s)])
    sample = np.random.default_rng(5).choice(len(index), 2000, replace=False)
    assert all(index.key[r] == first_key[int(r)] for r in sample)
    si, ti = int(index.sentence[123]), int(index.token[123])
    assert index.row_of(si, ti) == 123 and index.row_of(si, -1) is None
    frame = hits_frame([(123, 0.9)], index, sentences, lambda k: k, query_key=index.key[123])
    assert frame.iloc[0]["same sense"] == "✓" and f"[{sentences[si].tokens[ti].text}]" in frame.iloc[0]["context"]
    # the CSV's whole sentence and full sense key (the context is eight words each side, cut without a mark)
    words = [tok.text for tok in sentences[si].tokens]
    whole = " ".join([*words[:ti], f"[{words[ti]}]", *words[ti + 1 :]])
    assert frame.iloc[0]["sentence"] == whole and frame.iloc[0]["sense key"] == index.key[123]
    assert same_sense_share([(123, 0.9), (124, 0.8)], index, index.key[123]) in (0.5, 1.0)


def test_semcor_occurrences_read_from_the_feature_cache_equal_their_embedding(tmp_path, monkeypatch) -> None:
    """The Polysemy explorer's fast path: SemCor occurrences' vectors read from the WSD probe's feature
    cache are the vectors that embedding their sentences gives (up to the cache's float16), and no cache
    means no fast path (nothing is extracted behind the user's back)."""
    from corpora.semcor import load_semcor
    from features import get_features, has_layers, open_layer
    from models.registry import load_embedder
    from probes.tasks.wsd.sources import builtin_train
    from viz.polysemy import build_lemma_index, occurrence_vectors, semcor_occurrences

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    glove = load_embedder("glove-6b-50d")
    split = builtin_train(None)
    assert not has_layers(glove, split.feature_key, [0])
    with pytest.raises(FeatureCacheError, match="not in the feature cache"):
        open_layer(glove, split.feature_key, 0)
    get_features(glove, split.feature_key, split.layout.sentences, None, keep=split.keep, show_progress=False)
    assert has_layers(glove, split.feature_key, range(glove.num_layers))
    sentences, _ = load_semcor()
    index = corpus_index(sentences)
    occs = [
        o
        for word in ("bank", "new_york", "take")
        for o in semcor_occurrences(sentences, build_lemma_index(sentences), word, cap=15)[0]
    ]
    assert any(o.end - o.start > 1 for o in occs)  # a multiword token: the mean of its pieces
    rows = [index.row_of(*o.ref) for o in occs]
    cached = rows_vectors(split.layout, lambda j: open_layer(glove, split.feature_key, j), glove.num_layers, rows)
    Xn = corpus_vectors(split.layout, lambda j: open_layer(glove, split.feature_key, j), 0)  # the search matrix
    assert Xn.shape == (len(index), 50)
    assert np.allclose(Xn[rows], cached[0] / np.linalg.norm(cached[0], axis=1, keepdims=True), atol=1e-6)
    embedded = occurrence_vectors(lambda sents: [o.vectors for o in glove.embed(sents)], occs)
    assert cached.shape == embedded.shape == (1, len(occs), 50)
    assert np.allclose(cached, embedded, rtol=2e-3, atol=2e-3)


def test_senses_differ_by_symbol_as_well_as_colour() -> None:
    """For "bank" two senses' hues (purple and blue) look the same to a deuteranope: each sense group now has a
    marker symbol of its own too, in 2-D and 3-D scatters alike (3-D: the symbols scatter3d draws)."""
    from viz.figures import SYMBOLS_3D
    from viz.occurrence_figures import layer_measures_figure

    coords = np.random.default_rng(0).normal(size=(6, 2))
    groups = ["bank.n.01", "bank.n.01", "bank.n.02", "bank.n.02", "bank.v.01", "bank.v.01"]
    fig = occurrence_scatter(coords, groups, ["h"] * 6)
    symbols = [t.marker.symbol for t in fig.data]
    assert len(set(symbols)) == 3
    fig3 = occurrence_scatter(np.random.default_rng(0).normal(size=(6, 3)), groups, ["h"] * 6)
    assert {t.marker.symbol for t in fig3.data} <= set(SYMBOLS_3D) and len({t.marker.symbol for t in fig3.data}) == 3
    assert not {"cross", "x"} & set(SYMBOLS_3D)  # scatter3d draws them as 1-px specks: a sense would vanish
    # the palette's look-alike pairs (two pinks: slots 4 and 8; two teals: 7 and 11) differ in symbol in 3-D too:
    # with 4 symbols "play.v.09" and "act.v.05" were both pink circles
    for a, b in ((4, 8), (7, 11)):
        assert SYMBOLS_3D[a % len(SYMBOLS_3D)] != SYMBOLS_3D[b % len(SYMBOLS_3D)]
    frame = pd.DataFrame(
        {"layer": [0, 1, 0, 1], "measure": ["1-NN same sense"] * 2 + ["explainable variance"] * 2, "value": 0.5}
    )
    lines = layer_measures_figure(frame)
    assert len({t.marker.symbol for t in lines.data}) == 2
    # two curves at the same values (here 0.5 each) both show: the later one drawn thinner and smaller over the first
    first, second = lines.data
    assert first.line.width > second.line.width and first.marker.size > second.marker.size
    occurrences = occurrence_scatter(coords, groups, ["h"] * 6)  # the Polysemy explorer's and projector's scatter
    assert len({t.marker.symbol for t in occurrences.data if t.name != "selected"}) == 3


def test_a_word_list_groups_keep_their_whole_line() -> None:
    """The map's CSV (and legend) named a group "line 1: king queen prince …": the rest of the line was nowhere."""
    from viz.space import parse_word_groups

    words, groups, _ = parse_word_groups("king queen prince princess man woman\nparis rome")
    assert groups[0] == "line 1: king queen prince princess man woman" and "…" not in "".join(groups)
    assert groups[-1] == "line 2: paris rome" and len(words) == 8
    # a group is named by its line in the box, blank lines counted ("line 4" was the sixth line); a token with no
    # letter or digit other than punctuation (an emoji) was dropped without a word: now a warning names it
    words, groups, warnings = parse_word_groups("king queen\n\n\nparis 🙂 rome, ⇒\n")
    assert groups == ["line 1: king queen"] * 2 + ["line 4: paris rome"] * 2
    assert warnings == ["Not words, left out: 🙂 ⇒ (a word has a letter or digit)."]


def test_a_side_by_side_panels_legend_shows_every_sense_unscrolled() -> None:
    """Two panels side by side put the sense legend under each plot, where plotly scrolled it: 2 of "interest"'s 7
    senses were out of sight. Now the figure is taller by the legend's rows and the legend never scrolls."""
    groups = [f"interest.n.0{k} (a sense named at some length)" for k in range(1, 8) for _ in range(3)]
    coords = np.random.default_rng(0).normal(size=(len(groups), 2))
    beside = occurrence_scatter(coords, groups, ["h"] * len(groups), height=560, legend_below=True, title="t")
    alone = occurrence_scatter(coords, groups, ["h"] * len(groups), height=560, title="t")
    assert beside.layout.legend.maxheight == 1 and beside.layout.legend.orientation == "h"
    assert beside.layout.height >= 560 + 24 * 8 and alone.layout.height == 560


def test_the_polysemy_coordinates_number_occurrences_and_markers_as_the_page_does() -> None:
    """The page calls the first occurrence "#1"; its CSV/JSON numbered points from 0 and had no occurrence number."""
    from viz.points import coordinates_frame

    meta = pd.DataFrame({"sense": ["a", "b", "a"]})
    frame = coordinates_frame(meta, np.array([[0.1, 0.2], [0.3, 0.4], [0.1, 0.2]]), np.array([0, 1, 0]))
    assert list(frame.columns) == ["occurrence", "sense", "x1", "x2", "point"]
    assert list(frame["occurrence"]) == [1, 2, 3] and list(frame["point"]) == [1, 2, 1]
    assert list(meta.columns) == ["sense"]


def test_a_search_reads_the_full_sense_keys_only_when_it_names_one_by_a_percent_sign() -> None:
    """The sense-key column (for CSVs) made "1", "n" or the word itself match every point through its key."""
    occs = [
        Occurrence(("the", "bank", "rose"), 1, 2, keys=("bank%1:14:00::",), source="brown1/br-a01 s3"),
        Occurrence(("we", "bank", "here"), 1, 2, keys=("bank%2:40:00::",), source="brown1/br-a01 s4"),
    ]
    meta = occurrence_metadata(occs, lambda g: "institution" if "%1" in g else "deposit")
    assert not search_mask(meta, "14").any() and not search_mask(meta, "re::00::").any()
    assert list(search_mask(meta, "%2:40")) == [False, True] and list(search_mask(meta, r"re:%1:")) == [True, False]
    assert list(search_mask(meta, "14", columns=["sense key"])) == [True, False]  # named columns are read as named
