"""From saved results to what people read: the paper-style tables and the one Markdown writer
(``tables``), the rigor tables (``rigor_tables``), the published numbers (``paper``), row-by-row result
diffs (``result_diff``, ``python -m probes compare``) and ``reproduce --verify`` (``verify``).
"""
