"""Where Imprint keeps its files.

The platform directories come from platformdirs. ``IMPRINT_CONFIG_DIR`` and ``IMPRINT_DATA_DIR``
move them, which the tests use to give every test its own directories and people use for portable
installs.
"""

from __future__ import annotations

import os
from pathlib import Path

from imprint_desktop import APP_ID

CONFIG_DIR_ENV = "IMPRINT_CONFIG_DIR"
DATA_DIR_ENV = "IMPRINT_DATA_DIR"
CONFIG_FILE_NAME = "config.toml"


def config_dir() -> Path:
    """The directory holding ``config.toml``."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # noqa: PLC0415 - not when the folder is given

    return Path(platformdirs.user_config_dir(APP_ID, appauthor=False, roaming=True))


def data_dir() -> Path:
    """The directory for indexes, chat history, traces and logs."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # noqa: PLC0415 - not when the folder is given

    return Path(platformdirs.user_data_dir(APP_ID, appauthor=False))


def config_file() -> Path:
    """The default configuration file."""
    return config_dir() / CONFIG_FILE_NAME
