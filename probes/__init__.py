"""Probing benchmarks over the embedders of ``models`` and the data of ``corpora``. Never imports streamlit.

    from probes import run_probe
    run_probe("pos", "minilm", limit=200).to_frame()

- ``run``:        ``run_probe``, the one run path (CLI, reproduce, sweep, the app).
- ``registry``:   ``PROBES``, probe name -> ``ProbeSpec`` (runner, baselines, tables, options, inputs, chart).
- ``layers``:     ``LayerSpec``, the layer or layer combination a probe reads, validated up front.
- ``results``:    ``ProbeResult``, what every probe returns, and the result files.
- ``result_names``: what a result's names say about its settings; earlier versions' files read under them.
- ``tasks/``:     one module (or package) per probe and its data: wsd/, pos, mix, tag, span, contextuality, cka,
                  structural, head_syntax.
- ``estimators/``: fit/predict/score pieces the tasks share: the classifier trainer, probe families,
                  control tasks, MDL, majority baselines, BIO scoring, the λ-ablation tagger, measures.
- ``stats/``:     units, intervals, seeds, paired comparisons, claims, layer profiles, strata.
- ``reporting/``: paper-style tables, the published numbers, result diffs, verification.
- ``inputs``, ``errors``: the user's files a probe reads; the request checks and their errors.
- ``estimate``, ``progress``: a run's estimate before it starts; the one progress display.
- ``reproduce``:  the zoo through the run path, then the tables; ``syntax_views``: the Syntax page's work.
- ``cli``:        the command line (``python -m probes``).
"""


def run_probe(*args, **kwargs):
    """``probes.run.run_probe`` (imported on first call: ``import probes`` stays light)."""
    from probes.run import run_probe as run  # lazy: the run path imports torch and the model zoo

    return run(*args, **kwargs)
