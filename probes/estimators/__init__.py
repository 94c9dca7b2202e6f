"""Estimators the probes share, in scikit-learn's fit/predict/score shape or as plain measures: the
classifier trainer and ``LinearProbe`` (``classifier``), probe families (``families``), control tasks
(``control``), MDL online codes (``mdl``), the majority-label baseline (``majority``), BIO span F1
(``bio``), the λ-ablation tagger (``mix_tagger``), contextuality measures and linear CKA. No data loading
and no result files here: the tasks do that.
"""
