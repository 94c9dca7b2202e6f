"""Issue 30, page settle: a page asks for the browser code of its heavy elements before it computes them.

``app_pages.preload`` imports Streamlit's own code chunks (plotly.js, the data grid) from the page's
``static/js`` folder; the names carry a hash of the installed Streamlit, so they are read from its package.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from test_app import open_page

from app_pages.preload import CHUNKS, chunk_files, preload_script


def test_the_chunks_are_the_installed_streamlits_files() -> None:
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    for element in CHUNKS:
        files = chunk_files(element)
        assert len(files) == 1 and (folder / files[0]).is_file(), (element, files)
    script = preload_script(("plotly",))
    assert script.startswith("<script>") and f'import("./static/js/{chunk_files("plotly")[0]}")' in script
    assert chunk_files("dataframe")[0] not in script  # only what the page asks for
    assert preload_script(()) is None


def test_a_page_with_charts_preloads_plotly_in_the_sidebar_and_a_page_without_does_not() -> None:
    at = open_page("reproduce")
    scripts = [str(h.proto) for h in at.sidebar.get("html")]
    assert len(scripts) == 1 and chunk_files("plotly")[0] in scripts[0]
    assert chunk_files("dataframe")[0] not in scripts[0]
    assert not open_page("embedding_space").sidebar.get("html")
