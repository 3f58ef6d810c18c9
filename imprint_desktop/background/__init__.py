"""Qt glue between the widgets and the pure-Python core: the loop thread and its bridge, download
workers.

Importing the package first guards the process against a reference-count bug of the pinned PySide6
on Python 3.11 (see :mod:`.qt_refcounts`); every Qt module of the app imports this package, or
``ui``, which installs the guard too.
"""

from imprint_desktop.background.qt_refcounts import protect_singletons

protect_singletons()
