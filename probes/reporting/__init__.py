"""From saved results to what people read: the paper-style tables and the Markdown table renderer
(``tables``), the rigor tables (``rigor_tables``), the published numbers (``paper``), row-by-row result
diffs (``result_diff``, ``python -m probes compare``), ``reproduce --verify`` (``verify``), old results'
intervals restated on today's units (``restate``) and the note under a table whose rows come from more than one
training schedule (``schedule_notes``).
"""
