"""A reply's research record, read from its trace: the report and the views it is drawn in.

:mod:`.report` reads a trace into the report (the summary, the budgets per round, the activity),
:mod:`.rows` words the activity's rows, :mod:`.claims` what the answer stands on (its verdict and
claims), :mod:`.chart` gives the budgets as chart series and :mod:`.page` writes the report as a
self-contained HTML page.
"""
