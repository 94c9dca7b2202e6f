"""Linked selection (LIT's linked panels): a click on a scatter's point selects it everywhere on the page.

A scatter whose points carry their index as ``customdata`` (``viz.occurrence_figures.occurrence_scatter``)
is drawn with ``on_select=select_clicked_point(chart_key, pick_key, n)``; the clicked point becomes the
value of the page's own picker widget ``pick_key`` (bound to the URL, ``app_pages.state``), so a click
and a link (``?pick=``) restore the same selection and every panel that reads the picker follows it.
The callback runs before the rerun, so the picker can still be set.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from viz.projector_tools import clicked_index


def select_clicked_point(chart_key: str, pick_key: str, n: int, *, offset: int = 0) -> Callable[[], None]:
    """The ``on_select`` of scatter ``chart_key``: the clicked point (0..n-1, plus ``offset`` for a 1-based
    picker) becomes ``st.session_state[pick_key]``; a click on nothing (or the ring) changes nothing."""

    def on_select() -> None:
        i = clicked_index(st.session_state.get(chart_key), n)
        if i is not None:
            st.session_state[pick_key] = i + offset

    return on_select


def linked_chart_kwargs(chart_key: str, pick_key: str, n: int, *, offset: int = 0, dims: int = 2) -> dict:
    """``chart(...)`` keyword arguments that make a 2-D scatter's clicks select a point (none for 3-D:
    a click there turns the camera)."""
    if dims != 2:
        return {}
    return {"on_select": select_clicked_point(chart_key, pick_key, n, offset=offset), "selection_mode": "points"}
