"""URLs as Imprint reads and shows them: one way to read an address, one redaction policy.

Addresses come from people (the server and proxy settings), from the model (``fetch_url``) and
from servers (redirects). :func:`http_url` is the one reading of an http(s) address: it must
parse, port included, name http or https and a host. :func:`proxy_url` reads a proxy's address
the same way, socks5 allowed too. Each caller words a refusal its own way — a setting's
validation message, a provider error, a tool result the model reads — from the reason
:class:`NotHttpUrl` gives. :func:`host_span` finds the host as it is written in an address, for
the window to highlight the server a page would come from.

**Redaction.** A URL carries credentials in three places: its userinfo (``user:password@``), its
query (``?api_key=…``) and its fragment (``#access_token=…``). What is shown of an address
depends on who wrote it:

* An address the person configured (a server, a proxy) is theirs and may hold their key in any
  of the three. Shown to people — the status line, errors, logs — it is :func:`public_url`:
  scheme, host, port and path, nothing else. Recorded in a trace it is :func:`redacted_url`: the
  userinfo as ``***@`` and each query value as ``***`` (the names stay, so the record says a
  credential was set without showing it), no fragment.
* An address the model asked to fetch is the name of a page, and the trace records it as asked
  (:func:`without_password`), except that a password written into it is ``***``.

An address too broken to parse is shown to people cut down by hand the same way (they must see
which address to fix) and recorded as :data:`NOT_A_URL` (a record holds only what could be read).
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import SplitResult, urlsplit, urlunsplit

HTTP_SCHEMES = ("http", "https")
#: What a proxy may speak: what ``network.proxy`` accepts and the HTTP client can use.
PROXY_SCHEMES = (*HTTP_SCHEMES, "socks5", "socks5h")
MASK = "***"
NOT_A_URL = "<not a valid URL>"
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what urlsplit strips from an address's start


class NotHttpUrl(ValueError):  # noqa: N818 - a reason, worded by each caller
    """Why a text is not an http(s) address (or a proxy's), in a phrase ("it names no server").

    ``reason`` says which check failed: ``unreadable`` (it does not parse, its port included),
    ``scheme`` (not one of those asked for; ``scheme`` is the one it has, "" for none) or
    ``host``.
    """

    def __init__(
        self, reason: Literal["unreadable", "scheme", "host"], message: str, scheme: str = ""
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.scheme = scheme


def http_url(text: str) -> SplitResult:
    """``text`` split into its parts, when it is an absolute http(s) URL naming a host with a
    valid port (or none); :class:`NotHttpUrl` otherwise. The scheme is compared in any case."""
    return _absolute_url(text, HTTP_SCHEMES, "it must start with http:// or https://")


def proxy_url(text: str) -> SplitResult:
    """``text`` split into its parts, when it is a proxy's address: read as :func:`http_url`
    reads one, a socks5 or socks5h scheme allowed too; :class:`NotHttpUrl` otherwise."""
    return _absolute_url(
        text, PROXY_SCHEMES, "it must start with http://, https://, socks5:// or socks5h://"
    )


def host_span(url: str) -> tuple[int, int] | None:
    """Where the host that :func:`urlsplit` reads is written in ``url``: (start, end), an IPv6
    address with its brackets, without userinfo or port. None when ``url`` does not parse, names
    no host, or has a tab or a line break where urlsplit reads the host (it drops them)."""
    split = _split(url)
    slashes = url.find("//")  # the first: a scheme holds no "/"
    if split is None or not split[0].hostname or slashes < 0:
        return None
    parts = split[0]
    before = url[:slashes].lstrip(_C0_OR_SPACE)
    for dropped in "\t\r\n":
        before = before.replace(dropped, "")
    written = url[slashes + 2 :]
    for end in "/?#":
        written = written.partition(end)[0]
    if before.lower() not in ("", f"{parts.scheme}:") or written != parts.netloc:
        return None
    host = written.rpartition("@")[2]
    at = slashes + 2 + len(written) - len(host)
    if "[" in host:  # urlsplit reads the host between the brackets
        first = host.index("[")
        close = host.find("]", first)
        if close < 0:
            return None
        return at + first, at + close + 1
    return at, at + len(host.partition(":")[0])


def public_url(url: str) -> str:
    """``url`` without user name, password, query or fragment: safe to show and to log.

    Never fails: an address too broken to parse (a port out of range, an unclosed "["), or one
    without ``//`` (``user:password@host:8080/v1``), is cut down by hand the same way.
    """
    split = _split(url)
    if split is None or not split[0].netloc:
        head = url.split("#", 1)[0].split("?", 1)[0]
        scheme, separator, rest = head.partition("://")
        if not separator:
            scheme, rest = "", head
        netloc, slash, path = rest.partition("/")
        return f"{scheme}{separator}{netloc.rpartition('@')[2]}{slash}{path}".rstrip("/")
    parts, port = split
    return urlunsplit((parts.scheme, _host_port(parts, port), parts.path.rstrip("/"), "", ""))


def redacted_url(url: str) -> str:
    """A configured address as a record keeps it: the userinfo as ``***@``, query values as
    ``***`` (names and flags kept), no fragment; :data:`NOT_A_URL` when it does not parse.

    Only the parts of an address after ``//`` are known to be userinfo and host: the trace takes
    a setting's value for an address when it holds ``://`` (the settings refuse a server or proxy
    address without a scheme).
    """
    split = _split(url)
    if split is None:
        return NOT_A_URL
    parts, port = split
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        netloc = f"{MASK}@{_host_port(parts, port)}"
    query = "&".join(
        f"{name}={MASK}" if separator else name
        for name, separator, _ in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def without_password(url: str) -> str:
    """An address the model asked for, as it asked, but a password in it replaced by ``***``;
    :data:`NOT_A_URL` when it does not parse."""
    split = _split(url)
    if split is None:
        return NOT_A_URL
    parts, _ = split
    if not parts.password:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{name}:{MASK}@{host}"))


def _absolute_url(text: str, schemes: tuple[str, ...], wanted: str) -> SplitResult:
    """``text`` split, when it parses (its port too), names one of ``schemes`` (in any case) and
    a host; :class:`NotHttpUrl` saying which check failed otherwise (``wanted`` when the
    scheme)."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - reading the port is part of the check
    except ValueError as error:  # an unclosed "[", a port out of range or not a number
        raise NotHttpUrl("unreadable", str(error)) from None
    if parts.scheme.lower() not in schemes:
        raise NotHttpUrl("scheme", wanted, parts.scheme)
    if not parts.hostname:
        raise NotHttpUrl("host", "it names no server")
    return parts


def loose_parts(url: str) -> SplitResult | None:
    """``url`` split as written, its scheme and port unchecked (for showing an address a model
    wrote, which may be anything); None when it cannot be split at all."""
    try:
        return urlsplit(url.strip())
    except ValueError:
        return None


def _split(url: str) -> tuple[SplitResult, int | None] | None:
    """``url`` split, with its port read; None when either fails."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    return parts, port


def _host_port(parts: SplitResult, port: int | None) -> str:
    """The host (lower case, an IPv6 address in brackets) and the port, without the userinfo."""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if port else host
