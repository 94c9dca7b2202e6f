"""Estimators the probes share, in scikit-learn's fit/predict/score shape or as plain measures: the
classifier trainer and ``LinearProbe`` (``classifier``), probe families (``families``), control tasks
(``control``), MDL online codes (``mdl``), the majority-label baseline (``majority``), BIO span F1
(``bio``), the λ-ablation tagger (``mix_tagger``), contextuality measures (``contextuality``), linear CKA
(``cka``), the structural probes' distance and depth fits and tree metrics (``structural``) and the attention
heads' dependency counts (``head_syntax``). No data loading
and no result files here: the tasks do that.
"""
