"""Probing benchmarks (WSD 1-NN, POS, scalar-mix ablation) and the data layer. Never imports streamlit."""
