"""The one place that builds HTTP clients, so every request honours the Network settings.

The remote provider, ``fetch_url`` and model downloads all get their client from
:func:`make_async_client`. That keeps three promises in one place:

* ``network.proxy`` set: every request goes through that proxy — except requests to this computer
  (``localhost``, ``127.0.0.1``, ``::1``), which a proxy elsewhere could not reach anyway and
  which people use for local model servers and wikis. Empty: the system's proxy environment
  variables (``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, …) apply, with the same loopback rule.
* ``network.ca_bundle`` set: the PEM file's authorities are trusted *in addition to* the default
  ones (the setting adds a company's authority; it does not replace the public ones). Empty: the
  default trust store, including ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` from the environment.
* Every request says who it is: ``User-Agent: Imprint/<version>``.

Clients carry no credentials: a provider adds its own ``Authorization`` header per request, so a
key can never leak to a page that ``fetch_url`` reads with the same client.

What those clients' answers say about retrying is read here once too: :func:`retry_after_seconds`
reads a ``Retry-After`` header for the remote provider and for model downloads, each of which
decides how long it is willing to wait.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from email.utils import parsedate_to_datetime
from pathlib import Path

import certifi
import httpx

from imprint_desktop import APP_NAME, __version__
from imprint_desktop.core.config import NetworkConfig
from imprint_desktop.core.errors import SettingValueError
from imprint_desktop.core.urls import public_url

USER_AGENT = f"{APP_NAME}/{__version__}"
DEFAULT_TIMEOUT = 30.0
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def make_async_client(
    settings: NetworkConfig, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT
) -> httpx.AsyncClient:
    """A client configured by the ``network.*`` settings (``Config.network``).

    Create it on the loop that will use it and close it there (``await client.aclose()``).
    Raises :class:`SettingValueError` naming the setting when the proxy or the CA file is unusable.
    """
    proxy = settings.proxy.strip()
    ca_bundle = settings.ca_bundle.strip()
    verify: ssl.SSLContext | bool = ssl_context(ca_bundle) if ca_bundle else True
    # A mount with no transport means "no proxy" for the hosts it matches, env proxies included.
    direct: dict[str, httpx.AsyncBaseTransport | None] = {
        f"all://{host}": None for host in LOOPBACK_HOSTS
    }
    try:
        return httpx.AsyncClient(
            proxy=proxy or None,
            mounts=direct,
            verify=verify,
            trust_env=True,  # an explicit proxy already overrides the proxy variables
            timeout=timeout,
            headers={"User-Agent": USER_AGENT},
        )
    except ImportError:
        which = f"{public_url(proxy)!r}" if proxy else "the system proxy (ALL_PROXY or HTTPS_PROXY)"
        raise SettingValueError(
            "network.proxy",
            f"{which} needs SOCKS support, which this installation lacks (the socksio "
            "package). Use an http:// proxy, or install httpx[socks].",
        ) from None
    except ValueError as error:
        raise SettingValueError(
            "network.proxy", f"{public_url(proxy)!r} is not a usable proxy address ({error})."
        ) from None


def ssl_context(ca_bundle: str) -> ssl.SSLContext:
    """The default trust (certifi's authorities) plus those in the ``ca_bundle`` PEM file."""
    path = Path(ca_bundle).expanduser()
    context = ssl.create_default_context(cafile=certifi.where())
    try:
        context.load_verify_locations(cafile=str(path))
    except FileNotFoundError:
        raise SettingValueError(
            "network.ca_bundle",
            f"the file {path} does not exist. Choose the PEM file again in Preferences → Network, "
            "or clear the setting.",
        ) from None
    except (ssl.SSLError, OSError, ValueError) as error:
        raise SettingValueError(
            "network.ca_bundle",
            f"{path} could not be read as PEM certificates ({error}). Choose a .pem or .crt "
            "file in Preferences → Network, or clear the setting.",
        ) from None
    return context


def retry_after_seconds(header: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date, 0 for
    a time already past, a negative number or NaN; None without a header or for one that is
    neither."""
    if not header:
        return None
    header = header.strip()
    with contextlib.suppress(ValueError):
        seconds = float(header)
        return seconds if seconds >= 0 else 0.0  # NaN too: a wait that makes no sense is none
    try:
        wait = parsedate_to_datetime(header).timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None  # not a date, or one out of any calendar's range
    return max(wait, 0.0)
