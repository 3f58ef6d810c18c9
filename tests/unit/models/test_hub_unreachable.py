"""A hub that cannot be reached is said in one sentence within three seconds, not after half a
minute of retries: a refused connection, and a server that takes the connection and never
answers (issue 41, item 7)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from imprint_desktop.core.errors import HubUnavailableError
from imprint_desktop.core.models.hub import HubClient
from imprint_desktop.core.models.network import HubConfig
from tests.support.dead_hosts import DEAD_HOSTS
from tests.support.hub_server import starter_hub

LIMIT = 3.0  # seconds, from the call to the sentence


@pytest.fixture(params=sorted(DEAD_HOSTS))
def dead_hub(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    with DEAD_HOSTS[request.param]() as url:
        yield request.param, url


def test_search_fails_fast_with_one_sentence(
    dead_hub: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    how, url = dead_hub
    client = HubClient(HubConfig(endpoint=url))
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(HubUnavailableError) as raised:
        client.search("qwen")
    elapsed = time.monotonic() - started
    assert elapsed <= LIMIT, f"{how}: {elapsed:.1f} s"
    message = str(raised.value)
    host = url.removeprefix("http://")
    assert message.startswith(f"Could not search the model hub: {host} ")
    assert ("refused" if how == "refused" else "did not answer") in message
    assert "\n" not in message and message.endswith("Check the network and the proxy settings.")
    assert not caplog.records, "no retry chatter: the sentence says it"


def test_listing_a_repository_fails_as_fast(dead_hub: tuple[str, str]) -> None:
    _how, url = dead_hub
    client = HubClient(HubConfig(endpoint=url))
    started = time.monotonic()
    with pytest.raises(HubUnavailableError, match="Could not list the files of org/model: "):
        client.repo_models("org/model", 8192)
    assert time.monotonic() - started <= LIMIT


def test_a_hub_gone_since_it_answered_is_said_as_fast() -> None:
    """It is asked every time, not trusted for having answered before."""
    with starter_hub() as hub:
        client = HubClient(HubConfig(endpoint=hub.url))
        assert client.search("smol").results
    started = time.monotonic()
    with pytest.raises(HubUnavailableError, match="refused the connection"):
        client.search("smol")
    assert time.monotonic() - started <= LIMIT
