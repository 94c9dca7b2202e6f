"""Statistics over probe results: the resampling unit of a test set and how rows state it (``units``: documents,
sentences, instances), bootstrap intervals and paired tests (``intervals``), an interval of a mean over strata
some of them small (``strata``), several seeds
merged (``seeds``), layer-vs-layer and model-vs-model comparisons (``comparisons``), the paper's claims as
tests (``claims``) and layer profiles across models of any depth (``profiles``).
"""
