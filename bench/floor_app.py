"""The floor under a first paint: a Streamlit page with a title and a paragraph, and with ``?chart=1``
one small plotly chart as well.

``bench_browser_latency.py`` serves it beside the app (its own server, the same config and browser)
and times its first paint the same way, in the same run: what Streamlit's frontend itself costs a new
visitor on this machine (loading and running its JavaScript; with a chart, plotly.js too), so the
app's first paint can be read as the floor plus the app's own part.
"""

import plotly.graph_objects as go
import streamlit as st

st.title("Floor")
st.markdown("One title and one paragraph: Streamlit's own first paint.")
if st.query_params.get("chart") == "1":
    st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2]), layout=dict(title="Floor chart")), key="floor")
