"""Pages of the Streamlit app (run by st.navigation in app.py); shared helpers in common.py, what the app
loads and caches in loaders.py."""
