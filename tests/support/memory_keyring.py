"""An in-memory keyring backend for unit tests (the real Secret Service is used in integration)."""

from __future__ import annotations

from keyring.backend import KeyringBackend
from keyring.errors import KeyringError, KeyringLocked, PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    """Keeps passwords in a dict; forgets them with the process."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        try:
            del self.passwords[(service, username)]
        except KeyError:
            raise PasswordDeleteError(username) from None


class LockedKeyring(MemoryKeyring):
    """A keyring whose collection is locked (its prompt dismissed): every write is refused, and
    every read with ``read_error``."""

    def __init__(self, read_error: KeyringError | None = None) -> None:
        super().__init__()
        self.read_error = read_error or KeyringLocked("the collection is locked")

    def get_password(self, service: str, username: str) -> str | None:
        raise self.read_error

    def set_password(self, service: str, username: str, password: str) -> None:
        raise KeyringLocked("the collection is locked")
