"""Which addresses ``fetch_url`` may reach (DESIGN §2), judged before and while connecting.

Every address falls in one of three classes (:class:`Reach`):

* **refused**, always: link-local addresses (``169.254.0.0/16``, ``fe80::/10``) and the cloud
  metadata services (``169.254.169.254``, ``fd00:ec2::254``, ``100.100.100.200``,
  ``192.0.0.192``, Azure's ``168.63.129.16`` and names such as ``metadata.google.internal``). A
  page there hands out a cloud machine's credentials; no setting and no consent reaches it.
* **local**: loopback, the private ranges and everything else that is not globally routable.
  People run wikis and documentation servers on their own machine and network, so these are
  fetched — but only a URL the person allowed may lead there: a public page that redirects to a
  local address is refused while ``tools.fetch_url_confirm`` is on (see :mod:`.fetch`).
* **public**: the rest.

An address that carries an IPv4 address inside an IPv6 one is judged by the IPv4 address it leads
to: IPv4-mapped (``::ffff:169.254.169.254``), IPv4-compatible (``::a9fe:a9fe``), IPv4-translated
(``::ffff:0:a9fe:a9fe``), NAT64 (``64:ff9b::/96``), 6to4 and Teredo. The local-use NAT64 prefix
``64:ff9b:1::/48`` places the IPv4 address where the network's own prefix length says; each place
is tried, and the prefix is local in any case. A host written as a number the way the system's
resolver reads one (``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376``, ``169.254.43518``)
is the address it spells.

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
    for text in (
        "169.254.169.254",
        "fd00:ec2::254",
        "100.100.100.200",
        "192.0.0.192",
        "168.63.129.16",  # Azure's host endpoint (WireServer): a public-looking address
    )
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
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
#: Where RFC 6052 puts the IPv4 address for each prefix length inside a /48 (bytes of the IPv6
#: address; byte 8 is always left out).
_NAT64_PLACES = ((6, 7, 9, 10), (7, 9, 10, 11), (9, 10, 11, 12), (12, 13, 14, 15))


def _destinations(address: IPAddress) -> tuple[IPAddress, ...]:
    """The IPv4 addresses an IPv6 address may lead to (none for an address that carries none)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return ()
    found: list[IPAddress] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    compatible = address in _IPV4_COMPATIBLE and int(address) > 1  # not "::" nor "::1"
    if compatible or address in _NAT64 or address in _IPV4_TRANSLATED:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address in _LOCAL_NAT64:
        packed = address.packed
        found.extend(
            ipaddress.IPv4Address(bytes(packed[i] for i in place)) for place in _NAT64_PLACES
        )
    return tuple(found)


def reach(address: IPAddress) -> Reach:
    """The class of ``address`` (see the module docstring)."""
    destinations = _destinations(address)
    for candidate in (address, *destinations):
        if candidate in METADATA_ADDRESSES or candidate.is_link_local:
            return Reach.REFUSED
    if address in _LOCAL_NAT64:
        return Reach.LOCAL
    destination = destinations[0] if destinations else address
    if not destination.is_global or destination.is_multicast:
        return Reach.LOCAL
    return Reach.PUBLIC


def literal_address(host: str) -> IPAddress | None:
    """``host`` as an IP address when it is written as one (``[::1]`` too), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def numeric_address(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` spells the way resolvers read numbers (``inet_aton``, and URL
    parsers after it), else None: one to four parts, each decimal, octal (``0`` first) or
    hexadecimal (``0x``), the last filling the bytes that are left (``2852039166``,
    ``0xa9.0xfe.43518``)."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        lowered = part.lower()
        if lowered.startswith("0x"):
            digits, base, allowed = lowered[2:], 16, "0123456789abcdef"
        elif len(part) > 1 and part.startswith("0"):
            digits, base, allowed = part[1:], 8, "01234567"
        else:
            digits, base, allowed = part, 10, "0123456789"
        if (not digits and base != 16) or len(digits) > 12 or not set(digits) <= set(allowed):
            return None
        numbers.append(int(digits or "0", base))
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (4 - len(leading)):
        return None
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def never_fetched(host: str) -> str | None:
    """Why a URL with ``host`` is never fetched, judged from the name alone (no lookup), or None."""
    name = host.strip().rstrip(".").lower()
    if name in METADATA_NAMES:
        return f"{name} is a cloud metadata service"
    address = literal_address(name) or numeric_address(name)
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
