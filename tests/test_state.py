"""app_pages/state.py: a page's choices live in the URL; a link restores them; a bad link falls back."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from app_pages import state

    names = ["minilm", "glove-6b-50d", "elmo-small"]
    st.selectbox("Model", names, key=state.bind("m", "minilm", names, param="model"))
    st.slider("Layer", 0, 6, key=state.bind("layer", 6, lo=0, hi=6))
    st.text_input("Word", key=state.bind("word", "bank"))
    st.checkbox("3-D", key=state.bind("three_d", False, param="3d"))
    st.multiselect("Layers", list(range(7)), key=state.bind("layers", [1, 2], list(range(7))))
    st.segmented_control("Unit", ["words", "pieces"], key=state.bind("unit", None, ["words", "pieces"]))
    state.flush()  # what every page does at its end (``app_pages.common.page``)


def _app(**params: str | list[str]) -> AppTest:
    at = AppTest.from_function(_page, default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_a_link_restores_every_choice() -> None:
    at = _app(model="elmo-small", layer="2", word="plant", **{"3d": "1"}, layers=["0", "5"], unit="pieces")
    assert not at.exception
    assert at.selectbox(key="m").value == "elmo-small"
    assert at.slider(key="layer").value == 2
    assert at.text_input(key="word").value == "plant"
    assert at.checkbox(key="three_d").value is True
    assert at.multiselect(key="layers").value == [0, 5]
    assert at.segmented_control(key="unit").value == "pieces"


def test_a_bad_link_falls_back_to_the_defaults() -> None:
    at = _app(model="<script>", layer="99", **{"3d": "maybe"}, layers=["1", "x"], unit="bits")
    assert not at.exception
    assert at.selectbox(key="m").value == "minilm"
    assert at.slider(key="layer").value == 6  # out of range: its top
    assert at.checkbox(key="three_d").value is False
    assert at.multiselect(key="layers").value == [1, 2]  # one bad item rejects the list
    assert at.segmented_control(key="unit").value is None
    at.text_input(key="word").set_value("plant").run()  # the first change writes every choice, the link's mended
    assert at.query_params["model"] == "minilm" and at.query_params["layer"] == "6"


def test_a_number_outside_its_range_is_taken_to_the_nearest_end() -> None:
    """A link made on a model with more layers, or a value typed by hand, opens the nearest valid value (the
    slider's end), not the default at the other end of the range."""
    at = _app(layer="-3")
    assert not at.exception
    assert at.slider(key="layer").value == 0
    at.text_input(key="word").set_value("plant").run()
    assert at.query_params["layer"] == "0"
    assert _app(layer="6.5").slider(key="layer").value == 6  # not an integer: the default, as before
    # options that are whole numbers (a layer or sentence picker): past their ends, the nearest end; a number between
    # them that is not one stays refused, and one bad item still rejects a list
    at = _app(layers=["-2", "9", "12"])
    assert not at.exception and at.multiselect(key="layers").value == [0, 6]
    assert _app(layers=["1", "x"]).multiselect(key="layers").value == [1, 2]


def test_changes_are_written_back_to_the_url() -> None:
    at = _app()
    assert not at.query_params  # the bare address is the defaults: an arrival writes nothing (no history entry)
    at.selectbox(key="m").set_value("glove-6b-50d").run()
    assert at.query_params["model"] == "glove-6b-50d" and at.query_params["word"] == "bank"  # defaults included
    assert "unit" not in at.query_params  # nothing chosen: not in the link
    at.slider(key="layer").set_value(3).run()
    at.text_input(key="word").set_value("play & <b>").run()
    at.multiselect(key="layers").set_value([4, 0]).run()
    at.segmented_control(key="unit").set_value("words").run()
    assert not at.exception
    qp = at.query_params
    assert (qp["model"], qp["layer"], qp["word"], qp["layers"], qp["unit"]) == (
        "glove-6b-50d",
        "3",
        "play & <b>",
        ["4", "0"],
        "words",
    )
    # The written link restores the same view in a fresh session.
    again = _app(**{k: v for k, v in qp.items()})
    assert again.selectbox(key="m").value == "glove-6b-50d" and again.slider(key="layer").value == 3
    assert again.text_input(key="word").value == "play & <b>" and again.multiselect(key="layers").value == [4, 0]


def _layered_page() -> None:
    import streamlit as st

    from app_pages import state

    layers = {"minilm": 7, "gpt-small": 5, "elmo-small": 3}
    model = st.selectbox("Model", list(layers), key=state.bind("m", "minilm", list(layers), param="model"))
    top = layers[model] - 1  # the slider's range follows the model, so Streamlit makes it a new widget
    st.slider(f"Layer of {model}", 0, top, key=state.bind("layer", 1, lo=0, hi=top))
    state.flush()


def test_a_widget_whose_range_changes_keeps_its_value_and_the_url_says_so() -> None:
    at = AppTest.from_function(_layered_page, default_timeout=60)
    at.query_params["model"], at.query_params["layer"] = "minilm", "4"
    at.run()
    assert at.slider(key="layer").value == 4
    at.selectbox(key="m").set_value("gpt-small").run()  # 5 layers: layer 4 is still there
    assert at.slider(key="layer").value == 4 and at.query_params["layer"] == "4"
    at.run()
    assert at.slider(key="layer").value == 4 and at.query_params["layer"] == "4"
    at.selectbox(key="m").set_value("elmo-small").run()  # 3 layers: back to the default, on screen and in the URL
    assert at.slider(key="layer").value == 1 and at.query_params["layer"] == "1"


def test_a_run_changes_the_url_once_and_back_restores_the_view(monkeypatch) -> None:
    """Each write of ``st.query_params`` is one browser history entry: a page that wrote its parameters one by one
    pushed 10–14 entries on opening, so leaving it took ~10 presses of Back; and Back after a change showed the new
    value still (the page wrote it over the URL the browser went back to). Now a run's changes go out as one, and a
    URL the browser's Back or Forward went to wins over the session's value."""
    from streamlit.runtime.state.query_params import QueryParams

    sent: list[int] = []
    real = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg", lambda self: (sent.append(1), real(self))[1])
    at = _app()
    assert not sent and not at.query_params  # arriving: the bare address stands for the defaults, no entry (after a
    at.run()  # click in the sidebar, the page's first write had been a second entry, so Back showed the page again)
    assert not sent  # nothing changed: no entry
    at.selectbox(key="m").set_value("elmo-small")
    at.slider(key="layer").set_value(2).run()
    assert len(sent) == 1 and at.query_params["model"] == "elmo-small" and at.query_params["layer"] == "2"
    assert at.query_params["word"] == "bank"  # every choice, defaults included: the link says all it restores
    at.query_params["model"], at.query_params["layer"] = "minilm", "6"  # a URL behind the session's (a widget's
    at.run()  # or st.rerun's run can carry one): not Back, so the session's view stays
    assert at.selectbox(key="m").value == "elmo-small" and at.query_params["model"] == "elmo-small"
    monkeypatch.setattr("app_pages.state._history_navigation", lambda: True)  # the browser's Back started the run
    at.query_params["model"], at.query_params["layer"] = "minilm", "6"
    at.run()
    assert at.selectbox(key="m").value == "minilm" and at.slider(key="layer").value == 6
    at.query_params["model"] = "<not a model>"  # a URL that does not fit keeps the session's value
    at.run()
    assert at.selectbox(key="m").value == "minilm"
    at.query_params["layer"] = "3"  # Forward to a view with layer 3
    at.run()
    assert at.slider(key="layer").value == 3
    at.query_params.clear()  # Back to the page's bare address (its arrival): the defaults, no entry written
    sent.clear()
    at.run()
    assert (at.selectbox(key="m").value, at.slider(key="layer").value) == ("minilm", 6) and not sent


def _rerun_page() -> None:
    import streamlit as st

    from app_pages import state
    from app_pages.common import page

    @page  # flushes in its finally, after st.rerun has taken the query string of before this run's changes
    def main() -> None:
        choice = st.selectbox("V", ["a", "b"], key=state.bind("v", "a", ["a", "b"], param="v"))
        if choice == "b" and not st.session_state.get("reran"):
            st.session_state["reran"] = True
            st.rerun()
        st.write(f"value={choice}")

    main()


def test_a_change_survives_st_rerun() -> None:
    """The review of round nine: adopting any URL that differed from what the session last wrote undid a change
    whenever a run called st.rerun (its rerun carried the URL from before the change was sent). Only a run the
    browser's Back or Forward started adopts the URL now."""
    at = AppTest.from_function(_rerun_page, default_timeout=60).run()
    at.selectbox(key="v").set_value("b").run()
    assert at.selectbox(key="v").value == "b" and at.query_params["v"] == "b"
    assert "value=b" in [m.value for m in at.markdown]


def test_back_to_a_partial_link_shows_its_defaults_and_an_emptied_list_is_written(monkeypatch) -> None:
    """The review of round ten: arriving by ``?model=elmo-small``, moving the layer, then Back to that link left the
    layer moved (a parameter the address lacked kept the session's value); an emptied list choice wrote nothing, so
    a link brought the default selection back. A link the page must mend (``?3d=true&layer=99``) is rewritten once,
    so that the address says what is shown."""
    from streamlit.runtime.state.query_params import QueryParams

    sent: list[int] = []
    real = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg", lambda self: (sent.append(1), real(self))[1])
    at = _app(model="elmo-small")
    at.slider(key="layer").set_value(2).run()
    assert at.query_params["layer"] == "2" and at.query_params["model"] == "elmo-small"
    monkeypatch.setattr("app_pages.state._history_navigation", lambda: True)  # Back, to the link as it arrived
    at.query_params.clear()
    at.query_params["model"] = "elmo-small"
    at.run()
    assert at.slider(key="layer").value == 6 and at.selectbox(key="m").value == "elmo-small"
    monkeypatch.setattr("app_pages.state._history_navigation", lambda: False)
    sent.clear()
    odd = _app(**{"3d": "true"}, layer="99")
    assert len(sent) == 1 and odd.checkbox(key="three_d").value is True and odd.query_params["layer"] == "6"
    odd.run()
    assert len(sent) == 1  # mended once
    odd.multiselect(key="layers").set_value([]).run()  # emptied: said as ?layers=, which a link reads back
    assert odd.query_params["layers"] in ("", [""]) and odd.query_params["layer"] == "6"
    assert _app(**dict(odd.query_params)).multiselect(key="layers").value == []


def test_a_text_too_long_for_an_address_is_left_out_of_the_link_and_said(monkeypatch) -> None:
    """A pasted text of 100,000 characters went into the URL as it was: the server refused the reload (HTTP 400,
    "Invalid HTTP request received.") and every choice of the view was lost with it. Back to a view the link left it
    out of keeps the text (a review of the change: Back had put the default word in its place)."""
    at = _app()
    at.text_input(key="word").set_value("river " * 20_000).run()
    assert not at.exception and "word" not in at.query_params
    assert "too long for the page's link (word: 120,000 characters)" in at.toast[0].value
    at.slider(key="layer").set_value(3).run()
    assert at.query_params["layer"] == "3" and "word" not in at.query_params and not at.toast  # said once
    at.slider(key="layer").set_value(4).run()
    monkeypatch.setattr("app_pages.state._history_navigation", lambda: True)  # Back, to the view with layer 3
    at.query_params["layer"] = "3"
    at.run()
    assert at.slider(key="layer").value == 3 and at.text_input(key="word").value == "river " * 20_000  # kept
    monkeypatch.setattr("app_pages.state._history_navigation", lambda: False)
    at.text_input(key="word").set_value("plant").run()
    assert at.query_params["word"] == "plant"
    from app_pages.state import MAX_LINKED

    at.text_input(key="word").set_value("é" * (MAX_LINKED // 6)).run()  # 6 characters an é, percent-encoded
    assert at.query_params["word"] == "é" * (MAX_LINKED // 6)
