"""The engine's sentences never show the credentials or query of ``remote.base_url``."""

from __future__ import annotations

import asyncio
import socket

import httpx

from imprint_desktop.background import services  # its test_remote is not a test of this module
from imprint_desktop.background.error_words import sentence
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import ProviderAuthError, ProviderUnavailableError
from tests.support.settings import make_config

SECRET = "hunter2"


def remote(base_url: str) -> Config:
    return make_config(
        {"model.provider": "remote", "remote.model": "qwen", "remote.base_url": base_url}
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_the_server_is_shown_as_the_remote_provider_shows_it() -> None:
    config = remote(f"https://ada:{SECRET}@llm.example:8443/v1/?api_key={SECRET}#{SECRET}")
    assert chosen_model(config).server_address == "https://llm.example:8443/v1"
    assert chosen_model(config).describe() == "qwen on https://llm.example:8443/v1"
    for error in (ProviderAuthError("401"), ProviderUnavailableError("The server is down.")):
        text = sentence(error, config)
        assert "llm.example:8443" in text
        assert SECRET not in text and "ada" not in text


def test_a_failed_connection_test_names_the_server_without_its_credentials() -> None:
    config = remote(f"http://ada:{SECRET}@127.0.0.1:{closed_port()}/v1?token={SECRET}")

    async def check() -> str:
        async with httpx.AsyncClient() as http:
            return (await services.test_remote(http, config, None)).message

    message = asyncio.run(check())
    assert message.startswith("Could not connect to the server at http://127.0.0.1:")
    assert SECRET not in message and "ada" not in message
