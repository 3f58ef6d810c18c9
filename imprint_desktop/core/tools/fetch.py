"""``fetch_url``: one http(s) GET, bounded in time and size, reduced to the page's main text.

Which addresses may be reached is decided in :mod:`.addresses`: link-local and cloud-metadata
addresses never; loopback and private ones when the person allowed the URL (or confirmation is off:
people run wikis and documentation servers on their own machine). Redirects are followed here, one
hop at a time, and every hop is checked like the first URL — its scheme, its host, every address the
host resolves to, and the address actually connected to. A redirect from a public page to a local
address is refused unless ``local_redirects`` (confirmation off): the person allowed the page they
saw, not the machines behind it. For the same reason a redirect to another site (another scheme,
host or port, http to https on the same host aside) is followed only when ``confirm_redirect``
allows it — the person is asked again, shown both addresses — and before its host is even looked
up (a DNS query carries the name out). Without ``confirm_redirect`` (confirmation off) redirects
are followed as any browser would.

The caller passes the time left; the whole exchange — connect, redirects, body — must fit in it.
At most :data:`MAX_BYTES` of the body are read, so a huge or endless response costs bounded memory.
Only text is accepted: HTML is reduced to its main text (navigation, scripts and the like removed;
parsed in a worker thread, never on the engine's loop),
plain text, Markdown, JSON, XML and CSV are kept as they are, and anything else (images, archives,
PDFs from the web) is refused with the content type named.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from imprint_desktop.core.consent import RedirectConsent, redirect_leaves_site
from imprint_desktop.core.errors import FetchError
from imprint_desktop.core.tools.addresses import HopGuard, literal_address, never_fetched
from imprint_desktop.core.urls import NotHttpUrl, http_url
from imprint_desktop.core.workspace.extract import decode
from imprint_desktop.core.workspace.html import html_page

MAX_BYTES = 2 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
MAX_REDIRECTS = 10
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = ("application/json", "application/xml", "application/ld+json", "text/")


@dataclass(frozen=True, slots=True)
class Page:
    url: str  # after redirects
    content_type: str
    title: str
    text: str
    truncated: bool


def check_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host (as
    :func:`~imprint_desktop.core.urls.http_url` reads it, and httpx too); :class:`FetchError`
    otherwise."""
    text = url.strip()
    try:
        http_url(text)
    except NotHttpUrl as problem:
        if problem.reason == "scheme":
            shown = f"{problem.scheme}:" if problem.scheme else "no scheme"
            raise FetchError(
                f"Only http:// and https:// URLs can be fetched ({url!r} has {shown})."
            ) from None
        if problem.reason == "host":
            raise FetchError(f"{url!r} has no host name.") from None
        raise FetchError(f"{url!r} is not a valid URL ({problem}).") from None
    try:
        httpx.URL(text)
    except httpx.InvalidURL as error:
        raise FetchError(f"{url!r} is not a valid URL ({error}).") from None
    return text


def check_target(url: str) -> str:
    """:func:`check_url`, and refuse at once what is never fetched, judged from the URL alone."""
    target = check_url(url)
    why = never_fetched(httpx.URL(target).raw_host.decode("ascii"))
    if why is not None:
        raise FetchError(
            f"{target} is never fetched: {why}. Imprint does not reach such addresses."
        )
    return target


async def fetch_page(
    client: httpx.AsyncClient,
    url: str,
    *,
    timeout: float | None,
    max_bytes: int = MAX_BYTES,
    local_redirects: bool = True,
    confirm_redirect: RedirectConsent | None = None,
) -> Page:
    """GET ``url`` within ``timeout`` seconds (the research time left) and extract its text.

    ``local_redirects``: whether a redirect from a public page may lead to a local address;
    ``confirm_redirect``: who allows a redirect to another site (see the module docstring). The
    time the person takes to decide is not counted against ``timeout``.
    """
    target = check_target(url)
    seconds = DEFAULT_TIMEOUT if timeout is None else max(timeout, 0.0)
    try:
        async with asyncio.timeout(seconds) as deadline:
            hops = _Hops(target, local_redirects, confirm_redirect, deadline)
            return await _get(client, hops, seconds, max_bytes)
    except (TimeoutError, httpx.TimeoutException):
        raise FetchError(f"{target} did not answer within {seconds:.0f} seconds.") from None
    except httpx.UnsupportedProtocol:
        raise FetchError(f"{target} redirected to a URL that is not http(s).") from None
    except httpx.HTTPError as error:
        raise FetchError(
            f"{target} could not be fetched: {error or type(error).__name__}."
        ) from None


@dataclass(slots=True)
class _Hops:
    """What one fetch's redirects are checked against: the URL the person allowed, the sites
    allowed so far, and the deadline that pauses while the person decides on a redirect."""

    url: str
    local_redirects: bool
    confirm: RedirectConsent | None
    deadline: asyncio.Timeout

    async def allow(self, from_url: str, to_url: str) -> None:
        """Raise :class:`FetchError` unless the redirect from ``from_url`` to ``to_url`` may be
        followed (the person is asked when it leaves the site)."""
        if self.confirm is None or not redirect_leaves_site(from_url, to_url):
            return
        loop = asyncio.get_running_loop()
        asked = loop.time()
        decision = await self.confirm(from_url, to_url)
        when = self.deadline.when()
        if when is not None:
            self.deadline.reschedule(when + loop.time() - asked)
        if not decision.allowed:
            raise FetchError(
                f"it is on another site, and the person did not allow it ({decision.value})"
            )


async def _get(client: httpx.AsyncClient, hops: _Hops, seconds: float, max_bytes: int) -> Page:
    url = hops.url
    hop_url, local_ok, previous = url, True, url  # the first URL is the one the person allowed
    for hop in range(MAX_REDIRECTS + 1):
        try:
            if hop:
                hop_url = check_target(hop_url)
            guard = HopGuard(hop_url, local_ok)
            named = literal_address(guard.host) is None
            if hop and named:  # asked before the name is looked up: a lookup carries it out
                await hops.allow(previous, hop_url)
            await guard.resolve()
            if hop and not named:  # an address: refused by the checks above without asking
                await hops.allow(previous, hop_url)
            request = client.build_request(
                "GET",
                hop_url,
                headers={"Accept": "*/*"},
                timeout=httpx.Timeout(seconds),
                extensions={"trace": guard.on_connect},
            )
            response = await client.send(request, stream=True, follow_redirects=False)
        except FetchError as error:
            if not hop:
                raise
            refused = f"{url} redirected to {hop_url!r}, which is refused: {error}"
            raise FetchError(refused) from None
        if not hop:
            local_ok = hops.local_redirects or guard.local
        try:
            if response.next_request is None:
                return await _page(response, max_bytes)
            previous, hop_url = hop_url, str(response.next_request.url)
        finally:
            await response.aclose()
    raise FetchError(f"{url} redirects too many times.")


async def _page(response: httpx.Response, max_bytes: int) -> Page:
    final_url = str(response.url)
    if response.status_code >= 400:
        raise FetchError(
            f"{final_url} answered HTTP {response.status_code} {response.reason_phrase}."
        )
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type and not content_type.startswith(_HTML_TYPES + _TEXT_TYPES):
        raise FetchError(
            f"{final_url} is not a text page (content type {content_type}); only HTML and "
            "plain text can be read."
        )
    body = bytearray()
    truncated = False
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) >= max_bytes:
            truncated = True
            del body[max_bytes:]
            break
    charset = response.charset_encoding
    data = bytes(body)
    is_html = content_type.startswith(_HTML_TYPES) or (
        not content_type and data.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))
    )
    if is_html:
        markup: str | bytes = _decode(data, charset) if charset else data
        # Parsed in a worker thread: the engine's loop stays free, so Stop and the time limit
        # end the wait at once (the parse itself is linear in the page, capped at MAX_BYTES).
        title, text = await asyncio.to_thread(html_page, markup, main_only=True)
        return Page(final_url, content_type or "text/html", title or final_url, text, truncated)
    if b"\x00" in data[:8192]:
        raise FetchError(f"{final_url} is binary data, not a text page.")
    text = _decode(data, charset) if charset else decode(data)[0]
    return Page(final_url, content_type or "text/plain", final_url, text, truncated)


def _decode(data: bytes, charset: str) -> str:
    try:
        return data.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return decode(data)[0]
