"""Imprint Desktop: a local research assistant that reads your own documents."""

__version__ = "0.1.0"
APP_NAME = "Imprint"
APP_ID = "imprint-desktop"
