"""Start loading the browser code of a page's heavy elements while the server still computes the page.

Streamlit's frontend loads the code of an element the first time one arrives: plotly.js (≈ 4.7 MB,
``PlotlyChart.<hash>.js``) when the script sends its first chart, the data grid (``DataFrame.<hash>.js``)
with its first table. A page that computes for a second before its first chart therefore has the browser
idle for that second and then parse plotly.js; measured on the 2-core box (issue 30, a page that sleeps 1 s
before one chart and a table, a new visitor): 5.06 s to the settled page, 3.97 s when the page asks for
both chunks first. A page asks only for what its first view draws: an unused chunk competes with the
page's own work (one chart, no table, the data grid asked for: 3.65 → 4.24 s).

The request is a dynamic ``import()`` of Streamlit's own file, at the address its frontend uses (the
``static/js`` folder beside the page), so the module is loaded once and the element finds it ready. The
files' names carry a hash of the installed Streamlit; a name not found (another version's layout) is
skipped and the page loads as it would without this. The script is the app's own constant text, never
user input (``unsafe_allow_javascript``), and sits in the sidebar, where it takes no room.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import streamlit as st

#: element -> the glob of its code chunk in Streamlit's static folder.
CHUNKS = {"plotly": "PlotlyChart.*.js", "dataframe": "DataFrame.*.js"}


@cache
def chunk_files(element: str) -> tuple[str, ...]:
    """The installed Streamlit's code file(s) for ``element`` (a key of :data:`CHUNKS`); () when none."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    return tuple(sorted(p.name for p in folder.glob(CHUNKS[element])))


def preload_script(elements: tuple[str, ...]) -> str | None:
    """The ``<script>`` that imports the code of ``elements``; None when none of it is found."""
    files = [name for element in elements for name in chunk_files(element)]
    if not files:
        return None
    imports = "".join(f'import("./static/js/{name}").catch(() => {{}});' for name in files)
    return f"<script>{imports}</script>"


def preload(*elements: str) -> None:
    """Ask the browser for the code of ``elements`` ("plotly", "dataframe") now, before the page draws them."""
    script = preload_script(tuple(elements))
    if script is not None:
        st.sidebar.html(script, unsafe_allow_javascript=True)
