"""Qt widgets. They reach the research engine only through the bridge in ``background``.

Importing the package first guards the process against a reference-count bug of the pinned PySide6
on Python 3.11 (see :mod:`imprint_desktop.background.qt_refcounts`), as ``background`` does: a
widget used on its own (the transcript in a test or a tool) is as safe as the whole window.
"""

from imprint_desktop.background.qt_refcounts import protect_singletons

protect_singletons()
