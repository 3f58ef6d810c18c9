"""The bounded Jinja environment a model's chat template runs in.

:mod:`.environment` is the sandbox itself; the measure of a value's size and the limits are
:mod:`.limits`, the checks of operators and text methods :mod:`.operators`, the bounded filters
:mod:`.filters`.
"""
