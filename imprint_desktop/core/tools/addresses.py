"""Which addresses ``fetch_url`` may reach (DESIGN §2), judged before and while connecting.

Every address falls in one of three classes (:class:`Reach`):

* **refused**, always: link-local addresses (``169.254.0.0/16``, ``fe80::/10``) and the cloud
  metadata services (``169.254.169.254``, ``fd00:ec2::254``, ``100.100.100.200``,
  ``192.0.0.192`` and names such as ``metadata.google.internal``). A page there hands out a cloud
  machine's credentials; no setting and no consent reaches it.
* **local**: loopback, the private ranges and everything else that is not globally routable.
  People run wikis and documentation servers on their own machine and network, so these are
  fetched — but only a URL the person allowed may lead there: a public page that redirects to a
  local address is refused while ``tools.fetch_url_confirm`` is on (see :mod:`.fetch`).
* **public**: the rest.

An address that carries an IPv4 address inside an IPv6 one (``::ffff:169.254.169.254``, NAT64,
6to4) is judged by the IPv4 address it leads to.

A URL's host is judged three times. Its name or literal address, before anything else — before the
person is even asked, so a URL that can never be fetched never reaches them (:func:`never_fetched`).
Every address the name resolves to, before connecting (:func:`HopGuard.resolve`): resolution
happens only after consent, because a DNS query can itself carry data out
(``secret.attacker.example``). And the address the connection was actually made to
(:meth:`HopGuard.on_connect`, an httpcore ``trace`` extension), so a name that resolves somewhere
else the second time (DNS rebinding) is caught before a byte is sent. Through a proxy that last
check would see the proxy, and the proxy resolves the name itself: there only the first two apply.
"""

from __future__ import annotations

import asyncio
import enum
import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from imprint_desktop.core.errors import FetchError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Reach(enum.Enum):
    PUBLIC = "public"
    LOCAL = "local"
    REFUSED = "refused"


METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(text)
    for text in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "192.0.0.192")
)
METADATA_NAMES: frozenset[str] = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _destination(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address leads to, when it carries one; else the address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def reach(address: IPAddress) -> Reach:
    """The class of ``address`` (see the module docstring)."""
    destination = _destination(address)
    for candidate in {address, destination}:
        if candidate in METADATA_ADDRESSES or candidate.is_link_local:
            return Reach.REFUSED
    if not destination.is_global or destination.is_multicast:
        return Reach.LOCAL
    return Reach.PUBLIC


def literal_address(host: str) -> IPAddress | None:
    """``host`` as an IP address when it is written as one (``[::1]`` too), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def never_fetched(host: str) -> str | None:
    """Why a URL with ``host`` is never fetched, judged from the name alone (no lookup), or None."""
    name = host.strip().rstrip(".").lower()
    if name in METADATA_NAMES:
        return f"{name} is a cloud metadata service"
    address = literal_address(name)
    if address is not None and reach(address) is Reach.REFUSED:
        return f"{address} is a link-local or cloud-metadata address"
    return None


def _refusal(url: str, why: str) -> FetchError:
    return FetchError(f"{url} is never fetched: {why}. Imprint does not reach such addresses.")


@dataclass
class HopGuard:
    """The checks for one request of a fetch (the first URL, or one redirect).

    ``local_ok`` says whether this hop may reach a local address. After :meth:`resolve`,
    ``local`` says whether the host's name or lookup gave local addresses only (what the person
    could see; the address connected to does not widen it).
    """

    url: str
    local_ok: bool
    local: bool = False
    host: str = field(init=False)
    port: int = field(init=False)
    _connecting_to: str = field(init=False, default="")

    def __post_init__(self) -> None:
        parsed = httpx.URL(self.url)
        self.host = parsed.raw_host.decode("ascii")
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)

    def check(self, addresses: tuple[IPAddress, ...]) -> None:
        """Refuse when any of ``addresses`` may not be reached from this hop."""
        for address in addresses:
            verdict = reach(address)
            if verdict is Reach.REFUSED:
                raise _refusal(
                    self.url, f"{self.host} leads to {address}, a link-local or metadata address"
                )
            if verdict is Reach.LOCAL and not self.local_ok:
                raise FetchError(
                    f"{self.url} was reached by a redirect and leads to {address}, an address on "
                    "this computer or its local network; only a page the person allowed may lead "
                    "there."
                )

    async def resolve(self) -> None:
        """Look the host up and check every address it has (see :meth:`check`).

        A name that does not resolve here is left to the connection (a proxy may resolve it;
        a direct connection fails on its own, or meets :meth:`on_connect`).
        """
        why = never_fetched(self.host)
        if why is not None:
            raise _refusal(self.url, why)
        address = literal_address(self.host)
        if address is not None:
            addresses: tuple[IPAddress, ...] = (address,)
        else:
            loop = asyncio.get_running_loop()
            try:
                found = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                return
            addresses = tuple(
                dict.fromkeys(ipaddress.ip_address(str(info[4][0])) for info in found)
            )
        self.check(addresses)
        self.local = bool(addresses) and all(reach(a) is Reach.LOCAL for a in addresses)

    async def on_connect(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's ``trace`` extension: check the address a direct connection was made to."""
        if event == "connection.connect_tcp.started":
            self._connecting_to = str(info.get("host", ""))
        elif event == "connection.connect_tcp.complete" and self._connecting_to == self.host:
            stream = info.get("return_value")
            if stream is None:
                return
            peer = stream.get_extra_info("server_addr")
            if not peer:
                return
            try:
                self.check((ipaddress.ip_address(str(peer[0]).partition("%")[0]),))
            except FetchError:
                await stream.aclose()  # nothing was sent on it: close it before refusing
                raise
