"""Estimators the probes share, in scikit-learn's fit/predict/score shape or as plain measures: the
classifier trainer and ``LinearProbe`` (``classifier``), its L-BFGS finish (``polish``), probe families
(``families``), control tasks (``control``), MDL online codes (``mdl``), the majority-label baseline (``majority``),
BIO span F1 (``bio``), the λ-ablation tagger (``mix_tagger``), contextuality measures (``contextuality``), linear CKA
(``cka``), the structural probes' distance and depth fits (``structural``), gold trees and their metrics
(``tree_metrics``) and the attention heads' dependency counts (``head_syntax``). No data loading and no result files
here: the tasks do that.
"""

#: The metrics of an MDL code (``mdl``), the task's and the control task's. Their block probes train under one fixed
#: schedule (``mdl.PROBE_SCHEDULE``), whatever the token probe's own.
MDL_METRICS = ("codelength_kbits", "compression", "control_codelength_kbits", "control_compression")
#: The metrics a token probe's rows gain from a control task (``control``) and an MDL code (``mdl``), after its
#: accuracy. Here, in a module that imports nothing, so ``python -m probes stats`` reads them without torch.
RIGOR_METRICS = ("accuracy", "control_accuracy", "selectivity", *MDL_METRICS)
#: The training schedules of ``classifier``'s loop, named here so that result readers need no torch.
EARLY_STOP, PLATEAU = "early-stop", "plateau"
