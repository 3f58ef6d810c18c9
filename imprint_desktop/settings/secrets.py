"""Secrets (API keys) in the operating system's keyring, never anywhere else.

The keyring is the Secret Service (GNOME Keyring, KWallet) on Linux, the Credential Manager on
Windows and the Keychain on macOS, reached through the ``keyring`` package. When no secure backend
exists, every operation raises :class:`KeyringUnavailableError` with a sentence that says what to
install or unlock: there is no silent fallback to a plaintext file.

Each secret is stored under the service name :data:`SERVICE` with the setting key (for example
``remote.api_key``) as the account name, so people can find and remove it with their keyring tool.

``keyring`` is imported when a secret is first read or written, not with this module: choosing a
backend is slow, and ``imprint settings get`` of an ordinary setting needs none.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keyring.backend

from imprint_desktop.core.errors import KeyringUnavailableError, SecretStoreError
from imprint_desktop.settings import schema

log = logging.getLogger(__name__)

SERVICE = "Imprint Desktop"

# Backends that are not a secure store: keyring's "no backend" stand-ins and plaintext files.
_INSECURE_BACKENDS = frozenset({"fail.Keyring", "null.Keyring", "file.PlaintextKeyring"})

_FRIENDLY_NAMES = {
    "SecretService.Keyring": "the Secret Service (GNOME Keyring or KWallet)",
    "kwallet.DBusKeyring": "KWallet",
    "Windows.WinVaultKeyring": "the Windows Credential Manager",
    "macOS.Keyring": "the macOS Keychain",
}


@dataclass(frozen=True)
class SecretLocation:
    """Where a secret lives, in words a person can use to find it."""

    backend: str
    service: str
    account: str

    def __str__(self) -> str:
        return f"{self.backend}, service “{self.service}”, account “{self.account}”"


class SecretStore:
    """Read and write declared secret settings in the OS keyring."""

    def __init__(
        self, backend: keyring.backend.KeyringBackend | None = None, service: str = SERVICE
    ) -> None:
        self._backend = backend
        self.service = service

    @property
    def backend(self) -> keyring.backend.KeyringBackend:
        """The backend in use; raises :class:`KeyringUnavailableError` when none is secure."""
        if self._backend is not None:
            backend = self._backend
        else:
            import keyring  # noqa: PLC0415 - see the module docstring

            backend = keyring.get_keyring()
        if not _is_secure(backend):
            raise KeyringUnavailableError(_unavailable_message(backend))
        return backend

    def available(self) -> bool:
        try:
            self.backend  # noqa: B018 - the property raises when there is no usable backend
        except KeyringUnavailableError:
            return False
        return True

    def backend_name(self) -> str:
        """A person's name for the keyring in use."""
        return describe_backend(self.backend)

    def location(self, key: str) -> SecretLocation:
        _secret_setting(key)
        return SecretLocation(self.backend_name(), self.service, key)

    def get(self, key: str) -> str | None:
        """The secret, or None when none is stored."""
        _secret_setting(key)
        backend = self.backend
        try:
            return backend.get_password(self.service, key)
        except Exception as error:
            raise _translate(error, "read", key) from error

    def has(self, key: str) -> bool:
        return bool(self.get(key))

    def set(self, key: str, value: str) -> None:
        """Store ``value``; an empty value removes the secret instead."""
        _secret_setting(key)
        if not value:
            self.delete(key)
            return
        backend = self.backend
        try:
            backend.set_password(self.service, key, value)
        except Exception as error:
            raise _translate(error, "store", key) from error
        log.info("stored %s in %s", key, describe_backend(backend))

    def delete(self, key: str) -> None:
        """Remove the secret; removing one that is not there is not an error."""
        _secret_setting(key)
        backend = self.backend
        from keyring.errors import PasswordDeleteError  # noqa: PLC0415 - loaded with the backend

        try:
            if backend.get_password(self.service, key) is None:
                return
            backend.delete_password(self.service, key)
        except PasswordDeleteError:
            return
        except Exception as error:
            raise _translate(error, "remove", key) from error
        log.info("removed %s from %s", key, describe_backend(backend))


def describe_backend(backend: keyring.backend.KeyringBackend) -> str:
    return _FRIENDLY_NAMES.get(_backend_id(backend), type(backend).__name__)


def _backend_id(backend: keyring.backend.KeyringBackend) -> str:
    module = type(backend).__module__.rpartition(".")[2]
    return f"{module}.{type(backend).__name__}"


def _is_secure(backend: keyring.backend.KeyringBackend) -> bool:
    children = getattr(backend, "backends", None)
    if children is not None:  # the chainer: secure when any backend it chains is
        return any(_is_secure(child) for child in children)
    return _backend_id(backend) not in _INSECURE_BACKENDS


def _unavailable_message(backend: keyring.backend.KeyringBackend) -> str:
    if sys.platform.startswith("linux"):
        hint = (
            "Install and unlock GNOME Keyring or KWallet (any Secret Service provider) and "
            "start Imprint from your desktop session"
        )
    else:
        hint = "Check that the system keychain is available to your user account"
    log.info("no secure keyring backend; keyring chose %s", _backend_id(backend))
    return (
        f"No secure system keyring is available, so API keys cannot be saved. {hint}. Imprint "
        "never stores API keys in plain text; for a single run you can pass one with "
        "`imprint ask --api-key-env VARIABLE`."
    )


def _translate(error: Exception, action: str, key: str) -> SecretStoreError:
    """A keyring failure as an error a person can act on; never includes the secret."""
    log.warning("keyring failed to %s %s: %s: %s", action, key, type(error).__name__, error)
    from keyring import errors  # noqa: PLC0415 - loaded with the backend

    if isinstance(error, errors.KeyringLocked):
        return SecretStoreError(
            f"The system keyring is locked, so Imprint could not {action} {key}. "
            "Unlock it and try again."
        )
    if isinstance(error, errors.InitError | errors.NoKeyringError):
        return KeyringUnavailableError(
            f"The system keyring could not be reached to {action} {key} ({type(error).__name__}). "
            "Check that your keyring service is running and unlocked."
        )
    return SecretStoreError(
        f"The system keyring could not {action} {key}: {type(error).__name__}. "
        "Check that it is running and unlocked."
    )


def _secret_setting(key: str) -> schema.Setting:
    setting = schema.get(key)
    if not setting.secret:
        raise SecretStoreError(f"{key} is not a secret setting; it belongs in the settings file.")
    return setting
