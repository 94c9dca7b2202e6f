"""Embedding Probe Lab — the Streamlit app.

    streamlit run app.py

A thin entry point: page setup and navigation. Each page lives in ``app_pages/`` (not ``pages/``,
so that navigation is explicit) and keeps its logic in small functions of ``viz/`` and
``app_pages/common.py``.
"""

from __future__ import annotations

import streamlit as st

# `streamlit run app.py` (from any directory) puts this file's folder, the repository root, on
# sys.path, so the project's packages import without a path computation here.
from app_pages.common import FIGURE_FORMAT_KEY
from app_pages.warmup import start_warmup
from models.allocator import reuse_freed_memory
from viz.export import FORMATS

st.set_page_config(page_title="Embedding Probe Lab", page_icon="🔬", layout="wide")

PAGES = {
    "Explore": [
        st.Page("app_pages/models.py", title="Models", icon=":material/deployed_code:", default=True),
        st.Page("app_pages/polysemy.py", title="Polysemy explorer", icon=":material/scatter_plot:"),
        st.Page("app_pages/embedding_space.py", title="Embedding space", icon=":material/hub:"),
        st.Page("app_pages/attention.py", title="Attention", icon=":material/grid_on:"),
        st.Page("app_pages/syntax.py", title="Syntax", icon=":material/account_tree:"),
    ],
    "Probe": [
        st.Page("app_pages/probes.py", title="Probes", icon=":material/monitoring:"),
        st.Page("app_pages/reproduce.py", title="Reproduce the paper", icon=":material/table_chart:"),
        st.Page("app_pages/layer_profile.py", title="Layer profile", icon=":material/stacked_line_chart:"),
    ],
}

reuse_freed_memory()  # batched extraction reuses its activation buffers (models/allocator.py)
start_warmup()  # read WordNet + SemCor in the background while the first page renders
page = st.navigation(PAGES)
with st.sidebar:
    st.caption(
        "**Embedding Probe Lab** — static and contextual word embeddings, layer by layer. "
        "Reproduces Peters et al. (2018), *Deep contextualized word representations*, §5."
    )
    # Every chart's modebar has a "Download plot" button (viz/export.py); plotly gives it one format.
    st.radio(
        "Chart downloads",
        FORMATS,
        key=FIGURE_FORMAT_KEY,
        horizontal=True,
        format_func=str.upper,
        help="The format of the camera button above each chart: SVG (vector, for papers) or PNG. "
        "The data behind a chart is the CSV button under it. The address bar holds a link "
        "to the current view.",
    )
page.run()
