"""The probes themselves: one module (or package) per probe, each defining ``PROBE = ProbeSpec(...)`` and
registered by one line in ``probes.registry.PROBES`` — ``wsd/`` (1-NN word senses), ``pos``, ``mix`` (the
λ ablation; its rows and table: ``mix_tables``), ``tag`` and ``span`` (the user's files), ``contextuality``,
``cka``, ``structural`` (Hewitt & Manning's distance and depth probes) and ``head_syntax`` (Clark et al.'s
attention heads) — plus the data helpers they share: ``conll`` (CoNLL-2000 slices), ``datafiles`` (a user's
train/dev/test files), ``token_labels`` (the generic token-labelling runner), ``rigor_options`` (its probe family
/ control / MDL options), ``preview`` (what a user's files hold) and ``sentences`` (plain-sentence corpora: SemCor's
words or a text file, read by ``contextuality`` and ``cka``).
"""
