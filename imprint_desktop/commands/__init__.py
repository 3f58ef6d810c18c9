"""The subcommands of ``imprint``: one module each, imported by :mod:`imprint_desktop.cli` only
when its command runs."""
