"""Qt widgets. They reach the research engine only through the bridge in ``engine``."""
