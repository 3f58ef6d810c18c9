"""API keys in the real Secret Service: gnome-keyring on a private D-Bus session bus."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from keyring.backends import SecretService

from imprint_desktop.settings.secrets import SERVICE, SecretStore
from tests.support.secret_service import SecretServiceSession, missing_tools, secret_service

pytestmark = pytest.mark.integration

KEY = "remote.api_key"


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SecretServiceSession]:
    missing = missing_tools()
    assert not missing, f"install {missing} (the README's test command does)"
    with secret_service(tmp_path / "keyring") as running:
        for name, value in running.env.items():
            monkeypatch.setenv(name, value)
        yield running


def read_back_in_another_process(session: SecretServiceSession) -> str:
    """What a separate process sees in the keyring: proof the secret left this process."""
    code = (
        "import keyring.backends.SecretService as s;"
        f"print(s.Keyring().get_password({SERVICE!r}, {KEY!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **session.env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return result.stdout.strip()


def test_store_read_remove_in_the_secret_service(session: SecretServiceSession) -> None:
    secrets = SecretStore(SecretService.Keyring())
    assert secrets.available()
    assert "Secret Service" in secrets.backend_name()
    assert secrets.get(KEY) is None

    secrets.set(KEY, "sk-integration-1")
    assert secrets.get(KEY) == "sk-integration-1"
    assert read_back_in_another_process(session) == "sk-integration-1"

    secrets.set(KEY, "sk-integration-2")  # replacing, not adding a second item
    assert read_back_in_another_process(session) == "sk-integration-2"

    secrets.delete(KEY)
    assert secrets.get(KEY) is None
    assert read_back_in_another_process(session) == "None"


def test_cli_stores_the_key_in_the_secret_service_and_nowhere_else(
    session: SecretServiceSession, tmp_path: Path
) -> None:
    config_dir = tmp_path / "config"
    env = {
        **os.environ,
        **session.env,
        "IMPRINT_CONFIG_DIR": str(config_dir),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring",
    }

    def imprint(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "imprint_desktop", "settings", *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    stored = imprint("set", KEY, "-", stdin="sk-cli-secret\n")
    assert stored.returncode == 0, stored.stderr
    assert "Secret Service" in stored.stdout
    assert read_back_in_another_process(session) == "sk-cli-secret"

    shown = imprint("get", KEY)
    assert shown.returncode == 0 and "(stored in the Secret Service" in shown.stdout
    listing = imprint("list", "--json")
    assert listing.returncode == 0, listing.stderr
    assert "sk-cli-secret" not in listing.stdout + listing.stderr
    assert not config_dir.exists() or not any(
        "sk-cli-secret" in path.read_text() for path in config_dir.rglob("*") if path.is_file()
    )

    assert imprint("reset", KEY).returncode == 0
    assert read_back_in_another_process(session) == "None"


def test_without_a_session_bus_the_keyring_is_unavailable(tmp_path: Path) -> None:
    """No D-Bus: a clear error, never a silent plaintext fallback."""
    env = {
        **os.environ,
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/no-bus",
        "IMPRINT_CONFIG_DIR": str(tmp_path / "config"),
    }
    env.pop("PYTHON_KEYRING_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-m", "imprint_desktop", "settings", "set", KEY, "-"],
        env=env,
        input="sk-nowhere\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "No secure system keyring" in result.stderr or "could not be reached" in result.stderr
    assert not (tmp_path / "config").exists() or "sk-nowhere" not in "".join(
        path.read_text() for path in (tmp_path / "config").rglob("*") if path.is_file()
    )
