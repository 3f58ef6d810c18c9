"""A real Secret Service for tests: gnome-keyring on a private D-Bus session bus.

Nothing touches the developer's own keyring: the bus, HOME and the runtime folder are private to the
test, and both daemons end when the fixture ends (gnome-keyring exits when its bus goes away).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KEYRING_PASSWORD = b"imprint-test-password"


@dataclass(frozen=True)
class SecretServiceSession:
    """The environment a process needs to reach the private Secret Service."""

    env: dict[str, str]

    @property
    def bus_address(self) -> str:
        return self.env["DBUS_SESSION_BUS_ADDRESS"]


def missing_tools() -> list[str]:
    return [tool for tool in ("dbus-daemon", "gnome-keyring-daemon") if not shutil.which(tool)]


@contextmanager
def secret_service(root: Path) -> Iterator[SecretServiceSession]:
    """Start dbus-daemon and an unlocked gnome-keyring under ``root``; stop both afterwards."""
    home = root / "home"
    runtime = root / "runtime"
    home.mkdir(parents=True)
    runtime.mkdir(mode=0o700)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    # --fork returns once the bus listens; it prints the address and the pid.
    started = subprocess.run(
        ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    address, pid = started.stdout.split()[:2]
    env["DBUS_SESSION_BUS_ADDRESS"] = address
    try:
        # --daemonize returns once the keyring is initialised and unlocked with the password.
        subprocess.run(
            ["gnome-keyring-daemon", "--unlock", "--components=secrets", "--daemonize"],
            env=env,
            input=KEYRING_PASSWORD,
            capture_output=True,
            check=True,
            timeout=30,
        )
        yield SecretServiceSession(
            env={
                key: env[key]
                for key in (
                    "HOME",
                    "XDG_DATA_HOME",
                    "XDG_CONFIG_HOME",
                    "XDG_RUNTIME_DIR",
                    "DBUS_SESSION_BUS_ADDRESS",
                )
            }
        )
    finally:
        os.kill(int(pid), signal.SIGTERM)
