"""Fixtures for the widget tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "config.toml"


@pytest.fixture
def store(config_path: Path) -> SettingsStore:
    return SettingsStore(config_path, environ={})


@pytest.fixture
def secrets() -> SecretStore:
    return SecretStore()  # the autouse in-memory keyring
