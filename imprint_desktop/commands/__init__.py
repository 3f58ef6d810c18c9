"""The subcommands of ``imprint``: one module each, registered by :mod:`imprint_desktop.cli`."""
