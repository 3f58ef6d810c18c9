"""How the model store reaches the hub: endpoint, proxy, CA bundle and timeouts, from settings.

Two HTTP stacks talk to the hub. huggingface-hub asks for metadata (search, file lists, checksums)
through its shared client, which this module configures once per process with the person's proxy
and CA bundle and — because huggingface-hub passes ``timeout=None`` on some calls, which would let
a stalled server hang a worker forever — with timeouts. The bytes of a model go through our own
ranged ``httpx`` stream (:mod:`.download`), built from the same :class:`HubConfig`.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
import httpx2
import huggingface_hub
from huggingface_hub.utils import _http as hub_http

from imprint_desktop.core.config import NetworkConfig
from imprint_desktop.core.net import ssl_context

DEFAULT_ENDPOINT = "https://huggingface.co"
ENDPOINT_ENV = "HF_ENDPOINT"


@dataclass(frozen=True)
class HubConfig:
    """Everything needed to reach the hub; frozen so it can be handed to worker threads."""

    endpoint: str = DEFAULT_ENDPOINT
    proxy: str = ""
    ca_bundle: str = ""
    connect_timeout: float = 10.0
    read_timeout: float = (
        30.0  # a connection silent this long is stalled: retry from where it stopped
    )

    @classmethod
    def from_config(
        cls, settings: NetworkConfig, environ: Mapping[str, str] | None = None
    ) -> HubConfig:
        """Proxy and CA bundle from settings (``network.*``); the endpoint from ``HF_ENDPOINT``."""
        env = os.environ if environ is None else environ
        endpoint = (env.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT).rstrip("/")
        return cls(endpoint=endpoint, proxy=settings.proxy, ca_bundle=settings.ca_bundle)

    def _verify(self) -> ssl.SSLContext | bool:
        """The same trust as every other client of Imprint (:func:`core.net.ssl_context`)."""
        return ssl_context(self.ca_bundle) if self.ca_bundle else True

    def _timeouts(self) -> dict[str, float]:
        return {
            "connect": self.connect_timeout,
            "read": self.read_timeout,
            "write": self.read_timeout,
            "pool": self.connect_timeout,
        }

    def download_client(self) -> httpx.Client:
        """A client for model bytes: proxy and CA from settings, redirects followed (to the CDN)."""
        timeout = httpx.Timeout(
            self.read_timeout, connect=self.connect_timeout, pool=self.connect_timeout
        )
        return httpx.Client(
            proxy=self.proxy or None,
            verify=self._verify(),
            timeout=timeout,
            follow_redirects=True,
            trust_env=not self.proxy,
        )

    def hub_metadata_client(self) -> httpx2.Client:
        """The client huggingface-hub shares for metadata calls, configured like ours."""
        timeouts = self._timeouts()

        def enforce_timeouts(request: httpx2.Request) -> None:
            # huggingface-hub passes timeout=None on pagination and some calls; never wait forever.
            current = request.extensions.get("timeout") or {}
            request.extensions["timeout"] = {
                name: current.get(name) if current.get(name) is not None else value
                for name, value in timeouts.items()
            }

        hooks: list[object] = [enforce_timeouts]
        hub_hook = getattr(hub_http, "hf_request_event_hook", None)
        if hub_hook is not None:
            hooks.insert(0, hub_hook)  # offline mode, request ids, download counters
        return httpx2.Client(
            proxy=self.proxy or None,
            verify=self._verify(),
            follow_redirects=True,
            trust_env=not self.proxy,
            event_hooks={"request": hooks},  # type: ignore[dict-item]
        )


_applied_lock = threading.Lock()
_applied: tuple[str, str, float, float] | None = None


def configure_hub_metadata(config: HubConfig) -> None:
    """Make huggingface-hub's shared client use ``config``'s proxy, CA bundle and timeouts.

    The client is process-wide in huggingface-hub; it is replaced only when the network settings
    change, so concurrent metadata calls keep their connection pool.
    """
    global _applied  # noqa: PLW0603 - mirrors huggingface-hub's own process-wide client
    key = (config.proxy, config.ca_bundle, config.connect_timeout, config.read_timeout)
    with _applied_lock:
        if _applied == key:
            return
        huggingface_hub.set_client_factory(config.hub_metadata_client)
        _applied = key
