"""The keyring wrapper against an in-memory backend and against the backends it must refuse."""

from __future__ import annotations

import keyring
import keyring.errors
import pytest
from keyring.backends import chainer, fail

from imprint_desktop.core.errors import KeyringUnavailableError, SecretStoreError
from imprint_desktop.settings.secrets import SERVICE, SecretStore
from tests.support.memory_keyring import LockedKeyring, MemoryKeyring

KEY = "remote.api_key"


def test_store_read_and_remove(memory_keyring: MemoryKeyring) -> None:
    secrets = SecretStore()
    assert secrets.get(KEY) is None and not secrets.has(KEY)
    secrets.set(KEY, "sk-test-123")
    assert memory_keyring.passwords == {(SERVICE, KEY): "sk-test-123"}
    assert secrets.get(KEY) == "sk-test-123" and secrets.has(KEY)
    secrets.delete(KEY)
    assert memory_keyring.passwords == {}
    secrets.delete(KEY)  # removing what is not there is fine


def test_setting_an_empty_secret_removes_it(memory_keyring: MemoryKeyring) -> None:
    secrets = SecretStore()
    secrets.set(KEY, "sk-test-123")
    secrets.set(KEY, "")
    assert memory_keyring.passwords == {}


def test_location_names_backend_service_and_account() -> None:
    location = SecretStore().location(KEY)
    assert (location.backend, location.service, location.account) == ("MemoryKeyring", SERVICE, KEY)
    assert SERVICE in str(location) and KEY in str(location)


def test_only_secret_settings_go_to_the_keyring() -> None:
    with pytest.raises(SecretStoreError, match="not a secret"):
        SecretStore().set("remote.base_url", "http://x")
    with pytest.raises(KeyError):
        SecretStore().get("remote.no_such_key")


def test_no_backend_is_a_clear_error_not_a_fallback() -> None:
    keyring.set_keyring(fail.Keyring())
    secrets = SecretStore()
    assert not secrets.available()
    with pytest.raises(KeyringUnavailableError, match="No secure system keyring") as raised:
        secrets.set(KEY, "sk-test-123")
    assert "plain text" in str(raised.value)


def test_a_plaintext_backend_is_refused() -> None:
    plaintext = type("PlaintextKeyring", (MemoryKeyring,), {"__module__": "keyrings.alt.file"})
    backend = plaintext()
    with pytest.raises(KeyringUnavailableError):
        SecretStore(backend).set(KEY, "sk-test-123")
    assert backend.passwords == {}


def test_a_chain_is_usable_when_it_holds_a_secure_backend() -> None:
    class SecureChain(chainer.ChainerBackend):
        backends = [fail.Keyring(), MemoryKeyring()]  # type: ignore[assignment]

    class InsecureChain(chainer.ChainerBackend):
        backends = [fail.Keyring()]  # type: ignore[assignment]

    assert SecretStore(SecureChain()).available()
    assert not SecretStore(InsecureChain()).available()


def test_backend_failures_become_sentences_without_the_secret() -> None:
    secrets = SecretStore(LockedKeyring(keyring.errors.InitError("bus went away")))
    with pytest.raises(SecretStoreError, match="locked") as raised:
        secrets.set(KEY, "sk-very-secret")
    assert "sk-very-secret" not in str(raised.value)
    with pytest.raises(KeyringUnavailableError, match="could not be reached"):
        secrets.get(KEY)
