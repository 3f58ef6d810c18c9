"""URLs as Imprint reads and shows them: one way to read an address, one redaction policy.

Addresses come from people (the server and proxy settings), from the model (``fetch_url``) and
from servers (redirects). :func:`http_url` is the one reading of an http(s) address: it must
parse, port included, name http or https and a host. Each caller words a refusal its own way —
a setting's validation message, a provider error, a tool result the model reads — from the
reason :class:`NotHttpUrl` gives.

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
MASK = "***"
NOT_A_URL = "<not a valid URL>"


class NotHttpUrl(ValueError):  # noqa: N818 - a reason, worded by each caller
    """Why a text is not an http(s) address, in a phrase ("it names no server").

    ``reason`` says which check failed: ``unreadable`` (it does not parse, its port included),
    ``scheme`` (not http or https; ``scheme`` is the one it has, "" for none) or ``host``.
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
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - reading the port is part of the check
    except ValueError as error:  # an unclosed "[", a port out of range or not a number
        raise NotHttpUrl("unreadable", str(error)) from None
    if parts.scheme.lower() not in HTTP_SCHEMES:
        raise NotHttpUrl("scheme", "it must start with http:// or https://", parts.scheme)
    if not parts.hostname:
        raise NotHttpUrl("host", "it names no server")
    return parts


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
