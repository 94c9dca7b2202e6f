"""Pure helpers behind the Streamlit app: text validation, projections, plotly figures.

Nothing here imports streamlit, so the app's logic can be unit-tested without a browser or a
script runner. ``app_pages/`` holds the thin Streamlit layer that calls these functions.
"""
