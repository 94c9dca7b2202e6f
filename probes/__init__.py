"""Probing benchmarks over the embedders of ``models`` and the data of ``corpora``. Never imports streamlit.

- ``registry``:   ``PROBES``, probe name -> ``ProbeSpec`` (runner, baselines, tables, options, chart).
- ``layers``:     ``LayerSpec``, the layer or layer combination a probe reads, validated up front.
- ``results``:    ``ProbeResult``, what every probe returns, and the result files.
- ``features``:   the per-layer feature cache every probe reads through.
- ``classifier``: the one early-stopping trainer and ``LinearProbe``.
- ``wsd/``, ``pos``, ``mix`` (+ ``mix_model``): the paper's three probes; ``conll``: their tagging data.
- ``tables``, ``reproduce``, ``paper``: paper-style tables, the reproduction run, the published numbers.
- ``cli``: the command line (``python -m probes``).
"""
