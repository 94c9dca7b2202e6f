"""The floor under a first paint: a Streamlit page with a title and a paragraph; with ``?chart=1`` one small
plotly chart as well; with ``?chart=1&frame=1`` that chart inside the app's frame.

``bench_browser_latency.py`` serves it beside the app (its own server, the same config and browser)
and times its first paint the same way, in the same run: what Streamlit's frontend itself costs a new
visitor on this machine (loading and running its JavaScript; with a chart, plotly.js too), so the
app's first paint can be read as the floor plus the app's own part.

The frame (``frame=1``) is what every page of app.py draws besides its own content: the navigation (eight
pages in two sections, with icons), the sidebar's caption and format radio, a title and an introduction,
and the widgets a page's first view has (a picker, a slider, a download button under the chart, a caption).
It is not the goal's floor (issue 30 judges each page against the one-chart page); it tells how much of a
page's time over that floor its frame alone explains.
"""

import plotly.graph_objects as go
import streamlit as st

FIGURE = go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2]), layout=dict(title="Floor chart"))


def chart_page() -> None:
    st.title("Floor")
    st.markdown("One title and one paragraph, with `inline code`: the app's intro, shortened.")
    c1, c2 = st.columns(2)
    c1.selectbox("Results from", ["docs/results/runs", "results/runs"], key="floor_pick")
    c2.slider("Layer", 0, 6, 3, key="floor_layer")
    st.plotly_chart(FIGURE, key="floor", config={"displayModeBar": True, "displaylogo": False})
    st.download_button("Data (CSV)", b"x,y\n1,1\n2,3\n3,2\n", file_name="floor.csv", key="floor_csv")
    st.caption("A caption under the chart, as the app's pages have.")


def other_page() -> None:
    st.title("Another page")


if st.query_params.get("frame") == "1":
    icons = ["deployed_code", "scatter_plot", "hub", "grid_on"]
    icons += ["account_tree", "monitoring", "table_chart", "stacked_line_chart"]
    pages = [
        st.Page(
            chart_page if i == 0 else other_page,
            title=f"Page {i + 1}",
            icon=f":material/{icon}:",
            url_path=f"p{i + 1}",  # one function for seven pages: each needs its own address
            default=i == 0,
        )
        for i, icon in enumerate(icons)
    ]
    page = st.navigation({"Explore": pages[:5], "Probe": pages[5:]})
    with st.sidebar:
        st.caption("**Embedding Probe Lab** — the floor's copy of the app's sidebar.")
        st.radio("Chart downloads", ["svg", "png"], key="floor_format", horizontal=True, format_func=str.upper)
    page.run()
else:
    st.title("Floor")
    st.markdown("One title and one paragraph: Streamlit's own first paint.")
    if st.query_params.get("chart") == "1":
        st.plotly_chart(FIGURE, key="floor")
