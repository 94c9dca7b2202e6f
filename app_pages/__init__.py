"""Pages of the Streamlit app (run by st.navigation in app.py); shared helpers in common.py."""
