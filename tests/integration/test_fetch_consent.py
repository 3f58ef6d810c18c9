"""``fetch_url`` asks first, and never reaches link-local or cloud-metadata addresses (DESIGN §2).

Real HTTP servers on 127.0.0.1 play the pages, and a second one plays a proxy that records every
request it is asked to forward: the tests set it as ``network.proxy``, so any attempt to reach an
address that must not be reached would arrive there — an empty proxy log means nothing was sent.
(Loopback addresses never go through a proxy: those are checked on the page server's own log.)
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import Decision
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools import Toolbox, ToolResult
from imprint_desktop.core.workspace import Workspace
from tests.support.openai_server import OpenAIServer, Reply
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import make_config, research_settings

pytestmark = pytest.mark.integration

PAGE = (
    b"<html><head><title>Tides</title></head><body><p>High water comes at noon.</p></body></html>"
)


def page() -> Reply:
    return Reply.garbage(PAGE, content_type="text/html; charset=utf-8")


def redirect(location: str) -> Reply:
    return Reply(302, (("Location", location),), (b"",), label="redirect")


class Person:
    """Decides every fetch the same way, and remembers what it was asked."""

    def __init__(self, decision: Decision, *later: Decision) -> None:
        self.decisions = [decision, *later]  # one after another; the last one stays
        self.asked: list[str] = []
        self.redirects: list[tuple[str, str]] = []  # (from, to) of each redirect asked about

    async def __call__(self, url: str) -> Decision:
        self.asked.append(url)
        return self.decisions.pop(0) if len(self.decisions) > 1 else self.decisions[0]


@pytest.fixture
def web() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def proxy() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    (tmp_path / "w").mkdir()
    with Workspace(tmp_path / "w") as opened:
        yield opened


def fetch(
    workspace: Workspace,
    url: str,
    person: Person | None,
    proxy: OpenAIServer | None = None,
    **settings: Any,
) -> ToolResult:
    values = {"network.proxy": proxy.url if proxy else "", **settings}

    async def call() -> ToolResult:
        async with make_async_client(make_config(values).network) as client:
            toolbox = Toolbox(workspace, make_config(values).tools, client)
            arguments = {"url": url}
            # As the engine does: the toolbox names what needs a decision, the person decides,
            # and is asked again about a redirect to another site.
            asks = toolbox.needs_consent("fetch_url", arguments, timeout=10.0)
            decision = await person(asks) if asks is not None and person is not None else None

            async def redirect(from_url: str, to_url: str) -> Decision:
                assert person is not None
                person.redirects.append((from_url, to_url))
                return await person(to_url)

            return await toolbox.execute(
                "fetch_url",
                arguments,
                timeout=10.0,
                consent=decision,
                redirect_consent=redirect if person is not None else None,
            )

    return asyncio.run(call())


# --- asking -------------------------------------------------------------------------------------


def test_a_denied_fetch_sends_nothing_and_the_model_reads_why(
    web: OpenAIServer, workspace: Workspace
) -> None:
    web.script(page(), path="/page")
    url = f"{web.url}/page?d=the-secret-plan"
    person = Person(Decision.DENY)
    result = fetch(workspace, url, person)
    assert person.asked == [url]
    assert web.requests == [], "the listener was asked for the page"
    assert result.status == "error"
    assert result.content.startswith(f"Error: the person did not allow fetching {url}."), result


def test_with_nobody_to_ask_the_fetch_is_denied(web: OpenAIServer, workspace: Workspace) -> None:
    result = fetch(workspace, f"{web.url}/page", None)
    assert web.requests == []
    assert result.status == "error" and "did not allow fetching" in result.content
    assert "no one could be asked" in result.content


def test_an_allowed_fetch_is_fetched(web: OpenAIServer, workspace: Workspace) -> None:
    web.script(page(), path="/page")
    person = Person(Decision.ALLOW_ONCE)
    result = fetch(workspace, f"{web.url}/page", person)
    assert result.status == "ok", result.content
    assert "High water comes at noon." in result.content
    assert [request.path for request in web.requests] == ["/page"]


def test_with_confirmation_off_nobody_is_asked(web: OpenAIServer, workspace: Workspace) -> None:
    web.script(page(), path="/page")
    person = Person(Decision.DENY)
    result = fetch(workspace, f"{web.url}/page", person, **{"tools.fetch_url_confirm": False})
    assert person.asked == [] and result.status == "ok", result.content


def test_a_redirect_between_pages_of_this_computer_is_followed(
    web: OpenAIServer, workspace: Workspace
) -> None:
    """The person allowed a page on this computer: where it leads on this computer is fine."""
    web.script(redirect(f"{web.url}/page"), path="/old")
    web.script(page(), path="/page")
    result = fetch(workspace, f"{web.url}/old", Person(Decision.ALLOW_ONCE))
    assert result.status == "ok", result.content
    assert result.evidence[0].source == f"{web.url}/page"


# --- a redirect to another site -------------------------------------------------------------------


@pytest.fixture
def other() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def test_a_redirect_to_another_site_is_asked_about_with_both_addresses(
    web: OpenAIServer, other: OpenAIServer, workspace: Workspace
) -> None:
    """Allowing a site allows that site: a page of it that redirects elsewhere sends nothing
    there until the person, shown both addresses, says yes."""
    start = f"{web.url}/hop?d=the-secret-plan"
    target = f"http://localhost:{other.port}/collect?d=the-secret-plan"  # another host: a site
    web.script(redirect(target), path="/hop")
    other.script(page(), path="/collect")
    person = Person(Decision.ALLOW_SITE, Decision.DENY)
    result = fetch(workspace, start, person)
    assert person.asked == [start, target]
    assert person.redirects == [(start, target)]
    assert other.requests == [], "the other site was sent the address nobody allowed"
    assert result.status == "error"
    assert "another site" in result.content and target in result.content, result.content


def test_a_redirect_to_another_site_the_person_allows_is_followed(
    web: OpenAIServer, other: OpenAIServer, workspace: Workspace
) -> None:
    web.script(redirect(f"http://localhost:{other.port}/page"), path="/hop")
    other.script(page(), path="/page")
    person = Person(Decision.ALLOW_ONCE)
    result = fetch(workspace, f"{web.url}/hop", person)
    assert result.status == "ok", result.content
    assert [request.path for request in other.requests] == ["/page"]
    assert len(person.redirects) == 1


def test_a_redirect_within_the_site_is_not_asked_about(
    web: OpenAIServer, workspace: Workspace
) -> None:
    web.script(redirect("/page"), path="/old")
    web.script(page(), path="/page")
    person = Person(Decision.ALLOW_ONCE, Decision.DENY)
    result = fetch(workspace, f"{web.url}/old", person)
    assert result.status == "ok", result.content
    assert person.redirects == []


def test_with_nobody_to_ask_about_a_redirect_to_another_site_it_is_refused(
    web: OpenAIServer, other: OpenAIServer, workspace: Workspace
) -> None:
    web.script(redirect(f"http://localhost:{other.port}/page"), path="/hop")
    other.script(page(), path="/page")

    async def call() -> ToolResult:
        async with make_async_client(make_config({}).network) as client:
            toolbox = Toolbox(workspace, make_config({}).tools, client)
            return await toolbox.execute(
                "fetch_url", {"url": f"{web.url}/hop"}, timeout=10.0, consent=Decision.ALLOW_ONCE
            )

    result = asyncio.run(call())
    assert other.requests == []
    assert result.status == "error" and "another site" in result.content, result.content


# --- never fetched --------------------------------------------------------------------------------

NEVER = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://169.254.170.2/v2/credentials",
    "http://[fe80::1]/",
    "http://[::ffff:169.254.169.254]/latest/meta-data/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://100.100.100.200/latest/meta-data/",
    "http://192.0.0.192/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.Google.Internal./computeMetadata/v1/",
    "https://metadata.goog/",
    # Numeric spellings of 169.254.169.254, as the system's resolver reads them.
    "http://2852039166/latest/meta-data/",
    "http://0xa9fea9fe/latest/meta-data/",
    "http://169.254.43518/latest/meta-data/",
    "http://[::a9fe:a9fe]/latest/meta-data/",
    "http://[::ffff:0:a9fe:a9fe]/latest/meta-data/",
    "http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/",
    "http://168.63.129.16/machine?comp=goalstate",
]


@pytest.mark.parametrize("confirm", [True, False], ids=["confirm", "no-confirm"])
@pytest.mark.parametrize("url", NEVER)
def test_link_local_and_metadata_addresses_are_refused_without_asking(
    url: str, confirm: bool, proxy: OpenAIServer, workspace: Workspace
) -> None:
    person = Person(Decision.ALLOW_ONCE)
    result = fetch(workspace, url, person, proxy, **{"tools.fetch_url_confirm": confirm})
    assert result.status == "error"
    assert "is never fetched" in result.content, result.content
    assert person.asked == [], "a URL that is never fetched was put to the person"
    assert proxy.requests == [], "a request was sent towards the address"


@pytest.mark.parametrize("host", ["169.254.169.254.nip.invalid"])
def test_a_name_that_resolves_to_link_local_is_refused_after_the_lookup(
    host: str, proxy: OpenAIServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names are looked up only once the person allowed the URL (a lookup can carry data out);
    every address they have is checked before anything is sent."""
    if host.endswith(".invalid"):  # a DNS name that answers with the metadata address
        answers = {host: ["169.254.169.254"]}
        monkeypatch.setattr(socket, "getaddrinfo", fake_dns(answers))
    person = Person(Decision.ALLOW_ONCE)
    result = fetch(workspace, f"http://{host}/latest/meta-data/", person, proxy)
    assert person.asked == [f"http://{host}/latest/meta-data/"]
    assert result.status == "error" and "169.254.169.254" in result.content, result.content
    assert proxy.requests == []


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fe80::a9fe:a9fe]/",
        "http://[::a9fe:a9fe]/latest/meta-data/",
        "http://[::ffff:0:a9fe:a9fe]/latest/meta-data/",
        "http://[64:ff9b:1:a9fe:a9:fe00::]/latest/meta-data/",
        "http://168.63.129.16/machine?comp=goalstate",
    ],
)
def test_a_redirect_to_link_local_or_metadata_is_refused(
    location: str, web: OpenAIServer, proxy: OpenAIServer, workspace: Workspace
) -> None:
    web.script(redirect(location), path="/hop")
    result = fetch(workspace, f"{web.url}/hop", Person(Decision.ALLOW_ONCE), proxy)
    assert result.status == "error"
    assert "redirected to" in result.content and "refused" in result.content, result.content
    assert [request.path for request in web.requests] == ["/hop"]
    assert proxy.requests == [], "the redirect was followed"


@pytest.mark.parametrize("confirm", [True, False], ids=["confirm", "no-confirm"])
def test_a_public_page_leads_to_this_computer_only_with_confirmation_off(
    confirm: bool, web: OpenAIServer, proxy: OpenAIServer, workspace: Workspace
) -> None:
    """The person allowed the public page they saw, not the machines behind it."""
    proxy.script(redirect(f"{web.url}/private"), path="/start")  # "site.invalid", via the proxy
    web.script(page(), path="/private")
    result = fetch(
        workspace,
        "http://site.invalid/start",
        Person(Decision.ALLOW_ONCE),
        proxy,
        **{"tools.fetch_url_confirm": confirm},
    )
    assert [request.target for request in proxy.requests] == ["http://site.invalid/start"]
    if confirm:
        assert result.status == "error"
        assert "127.0.0.1" in result.content and "only a page the person allowed" in result.content
        assert web.requests == []
    else:
        assert result.status == "ok", result.content
        assert [request.path for request in web.requests] == ["/private"]


def test_a_name_that_resolves_elsewhere_when_connecting_is_caught(
    web: OpenAIServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the lookup before connecting says a public address, the connection's own
    lookup says this computer. The address actually connected to is checked before a byte is
    sent."""
    web.script(redirect(f"http://rebind.invalid:{web.port}/private"), path="/start")
    web.script(page(), path="/private")
    answers = {
        # the page itself (public, then reached on this computer, which the person allowed)
        "public.invalid": ["93.184.216.34", "127.0.0.1"],
        # where it redirects: public to the check, this computer to the connection
        "rebind.invalid": ["93.184.216.34", "127.0.0.1"],
    }
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns(answers))
    result = fetch(
        workspace, f"http://public.invalid:{web.port}/start", Person(Decision.ALLOW_ONCE)
    )
    assert [request.path for request in web.requests] == ["/start"], "the rebound hop was sent"
    assert result.status == "error"
    assert "127.0.0.1" in result.content and "only a page the person allowed" in result.content


def fake_dns(answers: dict[str, list[str]]) -> Any:
    """``socket.getaddrinfo`` answering the names in ``answers`` in turn (the last one stays)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in answers:
            return real(host, port, *args, **kwargs)
        queue = answers[name]
        address = queue.pop(0) if len(queue) > 1 else queue[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 80)))]

    return getaddrinfo


# --- the engine: the wait is the person's, and it is not progress ----------------------------


def test_the_wait_for_consent_is_not_research_time_and_a_denial_is_not_progress(
    web: OpenAIServer, workspace: Workspace
) -> None:
    offset = [0.0]

    def clock() -> float:
        return time.monotonic() + offset[0]

    async def person(call_id: str, url: str) -> Decision:
        offset[0] += 1000.0  # far longer than the whole research budget
        return Decision.DENY

    events: list[ev.Event] = []
    fetches = [Step(calls=[("fetch_url", {"url": f"{web.url}/p{n}"})]) for n in range(2)]
    provider = ScriptedProvider([*fetches, Step("Nothing could be read.")])
    settings = research_settings(
        {
            "chat.research_timeout_sec": 10,
            "chat.research_no_progress_rounds": 2,
            "chat.research_first": False,
        }
    )

    async def reply() -> ev.ReplyResult:
        async with make_async_client(make_config().network) as client:
            engine = ResearchEngine(
                provider, settings, consent=person, sink=events.append, clock=clock
            )
            toolbox = Toolbox(workspace, make_config().tools, client)
            return await engine.run("What do the pages say?", toolbox)

    result = asyncio.run(reply())
    assert web.requests == []
    assert result.stop_reason == "no_progress", result  # two denials: two rounds without progress
    assert result.user_wait_seconds >= 2000 and result.research_seconds < 10
    consents = [trace_line(event) for event in events if isinstance(event, ev.ConsentDecided)]
    fetch_calls = [e.call_id for e in events if isinstance(e, ev.ToolFinished)]
    assert [line["call_id"] for line in consents if line] == fetch_calls
    assert [line["url"] for line in consents if line] == [f"{web.url}/p0", f"{web.url}/p1"]
    for line in consents:
        assert line is not None
        assert set(line) == {"t", "type", "call_id", "url", "decision", "seconds"}
        assert line["type"] == "consent" and line["decision"] == "deny"
        assert line["seconds"] >= 1000
    assert [event.progress for event in events if isinstance(event, ev.RoundEnded)] == [
        False,
        False,
    ]
    paused = [event.time_paused for event in events if isinstance(event, ev.BudgetUpdate)]
    assert True in paused and paused[-1] is False
    denied = [m.content for m in provider.requests[1].messages if m.role == "tool"]
    assert denied and denied[0].startswith(f"Error: the person did not allow fetching {web.url}/p0")


def test_stop_while_the_person_decides_traces_the_fetch_as_cancelled(
    web: OpenAIServer, workspace: Workspace
) -> None:
    events: list[ev.Event] = []
    fetches = [Step(calls=[("fetch_url", {"url": f"{web.url}/p0"})]), Step("never asked for")]
    provider = ScriptedProvider(fetches)
    settings = research_settings({"chat.research_first": False})
    cancel = CancelToken()

    async def person(call_id: str, url: str) -> Decision:
        cancel.cancel()  # Stop, pressed while the card waits for the person
        await asyncio.Event().wait()  # the person never decides
        raise AssertionError("the wait outlived Stop")

    async def reply() -> ev.ReplyResult:
        async with make_async_client(make_config().network) as client:
            engine = ResearchEngine(
                provider, settings, cancel=cancel, consent=person, sink=events.append
            )
            toolbox = Toolbox(workspace, make_config().tools, client)
            return await engine.run("What does the page say?", toolbox)

    result = asyncio.run(reply())
    assert result.stop_reason == "cancelled" and web.requests == []
    consents = [trace_line(event) for event in events if isinstance(event, ev.ConsentDecided)]
    assert len(consents) == 1 and consents[0] is not None, consents
    line = consents[0]
    assert set(line) == {"t", "type", "call_id", "url", "decision", "seconds"}
    assert (line["type"], line["url"], line["decision"]) == (
        "consent",
        f"{web.url}/p0",
        "cancelled",
    )
    assert line["seconds"] >= 0
    paused = [event.time_paused for event in events if isinstance(event, ev.BudgetUpdate)]
    assert paused[-1] is False, "the research clock was left paused"
