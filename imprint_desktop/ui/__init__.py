"""Qt widgets. They reach the research engine only through the bridge in :mod:`imprint_desktop.engine`."""
