"""Every error Imprint raises on purpose, in one tree.

::

    ImprintError                   anything Imprint can explain to a person
    ├── SettingsError              configuration problems
    │   ├── UnknownSettingError    a key that is not declared in the schema
    │   ├── SettingValueError      a value of the wrong type or outside its bounds
    │   └── SettingsWriteError     the config file could not be written (disk full, permissions)
    └── SecretStoreError           the OS keyring failed or refused an operation
        └── KeyringUnavailableError  no usable keyring backend exists at all

Each message is a sentence a person can act on. Details for developers go to the log, and secrets go
nowhere: no exception message ever contains a secret value.
"""

from __future__ import annotations


class ImprintError(Exception):
    """Base of every error Imprint raises deliberately."""


class SettingsError(ImprintError):
    """A problem with reading, validating or writing settings."""


class UnknownSettingError(SettingsError, KeyError):
    """A key that no setting declares."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"There is no setting named {key!r}. `imprint settings list` shows them all."
        )
        self.key = key

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return str(self.args[0])


class SettingValueError(SettingsError, ValueError):
    """A value that does not satisfy its setting's declaration."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class SettingsWriteError(SettingsError, OSError):
    """The configuration file could not be written; the previous file is left as it was."""


class SecretStoreError(ImprintError):
    """The OS keyring could not store, read or delete a secret."""


class KeyringUnavailableError(SecretStoreError):
    """No secure keyring backend is available, so secrets cannot be stored at all."""
