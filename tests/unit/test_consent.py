"""Consent to fetch (DESIGN §2): sites, remembered decisions, the terminal prompt, the trace line,
and which addresses are never reached."""

from __future__ import annotations

import asyncio
import io
import ipaddress
from collections.abc import Awaitable, Callable

import pytest

from imprint_desktop.commands.fetch_consent import terminal_consent
from imprint_desktop.core.consent import (
    DECISION_WORDS,
    AllowedSites,
    Decision,
    remembering,
    site_of,
)
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.addresses import Reach, never_fetched, reach


def test_one_site_has_one_spelling() -> None:
    assert (
        site_of("http://Wiki.Example/a?b")
        == site_of("http://wiki.example:80/c")
        == ("http://wiki.example:80")
    )
    assert site_of("https://wiki.example/") == "https://wiki.example:443"
    assert site_of("http://wiki.example:8080/") != site_of("http://wiki.example/")
    assert site_of("http://[::1]:3000/") == "http://[::1]:3000"
    assert site_of("http://bücher.example/") == "http://xn--bcher-kva.example:80"


def test_decisions_are_worded_once_and_denials_say_so() -> None:
    assert set(DECISION_WORDS) == set(Decision)
    for decision in Decision:
        assert decision.allowed is decision.value.startswith("allow")
        assert decision.allowed is not decision.value.startswith(("deny", "cancelled"))
    assert not Decision.CANCELLED.allowed and not Decision.CANCELLED.asked
    assert {d for d in Decision if d.asked} == {
        Decision.ALLOW_ONCE,
        Decision.ALLOW_SITE,
        Decision.DENY,
    }


def recording(
    answers: list[Decision],
) -> tuple[list[str], Callable[[str, str], Awaitable[Decision]]]:
    asked: list[str] = []

    async def ask(call_id: str, url: str) -> Decision:
        asked.append(url)
        return answers.pop(0)

    return asked, ask


def test_a_site_allowed_for_the_conversation_is_not_asked_about_again() -> None:
    asked, ask = recording([Decision.ALLOW_SITE, Decision.DENY, Decision.ALLOW_ONCE, Decision.DENY])
    sites = AllowedSites()
    consent = remembering(ask, sites)

    async def decide(*urls: str) -> list[Decision]:
        return [await consent(f"c{n}", url) for n, url in enumerate(urls)]

    decisions = asyncio.run(
        decide(
            "http://wiki.example/a",
            "http://WIKI.example:80/b",  # the same site: not asked
            "https://wiki.example/c",  # another scheme: another site
            "http://other.example/d",
            "http://other.example/e",  # allowed once only: asked again
        )
    )
    assert decisions == [
        Decision.ALLOW_SITE,
        Decision.ALLOW_REMEMBERED,
        Decision.DENY,
        Decision.ALLOW_ONCE,
        Decision.DENY,
    ]
    assert asked == [
        "http://wiki.example/a",
        "https://wiki.example/c",
        "http://other.example/d",
        "http://other.example/e",
    ]
    assert len(sites) == 1


def test_the_trace_line_has_the_fields_of_design_5_and_no_password() -> None:
    event = ev.ConsentDecided(
        1.5, "f1", "http://ada:hunter2@wiki.example/p?q=1", Decision.DENY, 2.25
    )
    line = trace_line(event)
    assert line == {
        "t": 1.5,
        "type": "consent",
        "call_id": "f1",
        "url": "http://ada:***@wiki.example/p?q=1",
        "decision": "deny",
        "seconds": 2.25,
    }
    plain = trace_line(
        ev.ConsentDecided(0.0, "f2", "http://wiki.example/?d=x", Decision.ALLOW_FLAG, 0)
    )
    assert plain is not None and plain["url"] == "http://wiki.example/?d=x"


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("169.254.169.254", Reach.REFUSED),
        ("169.254.0.1", Reach.REFUSED),
        ("fe80::1", Reach.REFUSED),
        ("fd00:ec2::254", Reach.REFUSED),
        ("100.100.100.200", Reach.REFUSED),
        ("192.0.0.192", Reach.REFUSED),
        ("::ffff:169.254.169.254", Reach.REFUSED),
        ("64:ff9b::a9fe:a9fe", Reach.REFUSED),
        ("2002:a9fe:a9fe::1", Reach.REFUSED),
        ("::a9fe:a9fe", Reach.REFUSED),  # IPv4-compatible
        ("::ffff:0:a9fe:a9fe", Reach.REFUSED),  # IPv4-translated
        ("64:ff9b:1::a9fe:a9fe", Reach.REFUSED),  # local-use NAT64, as a /96
        ("64:ff9b:1:a9fe:a9:fe00::", Reach.REFUSED),  # local-use NAT64, as a /48
        ("64:ff9b:1:0:a9:fea9:fe00::", Reach.REFUSED),  # local-use NAT64, as a /56
        ("2001:0:4136:e378:8000:63bf:5601:5601", Reach.REFUSED),  # Teredo
        ("168.63.129.16", Reach.REFUSED),  # Azure's host endpoint
        ("64:ff9b:1::5db8:d822", Reach.LOCAL),  # local-use NAT64 is local whatever it carries
        ("::ffff:0:c0a8:101", Reach.LOCAL),
        ("127.0.0.1", Reach.LOCAL),
        ("::1", Reach.LOCAL),
        ("0.0.0.0", Reach.LOCAL),
        ("10.1.2.3", Reach.LOCAL),
        ("172.16.0.1", Reach.LOCAL),
        ("192.168.1.1", Reach.LOCAL),
        ("100.64.0.1", Reach.LOCAL),
        ("fd12:3456::1", Reach.LOCAL),
        ("::ffff:192.168.1.1", Reach.LOCAL),
        ("93.184.216.34", Reach.PUBLIC),
        ("2606:4700::1111", Reach.PUBLIC),
        ("::ffff:93.184.216.34", Reach.PUBLIC),
    ],
)
def test_the_class_of_an_address(address: str, expected: Reach) -> None:
    assert reach(ipaddress.ip_address(address)) is expected


def test_names_and_literals_refused_before_any_lookup() -> None:
    for host in (
        "metadata.google.internal",
        "Metadata.Google.Internal.",
        "169.254.169.254",
        # The metadata address in the numeric spellings a resolver reads (inet_aton's).
        "2852039166",
        "0xa9fea9fe",
        "0XA9FEA9FE.",
        "0251.0376.0251.0376",
        "0xa9.0xfe.0xa9.0xfe",
        "169.254.43518",
        "169.16689662",
        "[::a9fe:a9fe]",
        "168.63.129.16",
    ):
        assert never_fetched(host) is not None, host
    for host in ("example.org", "127.0.0.1", "[::1]", "2130706433", "localhost", "08.1.1.1"):
        assert never_fetched(host) is None, host  # these are judged after lookup, or allowed


# --- the terminal -----------------------------------------------------------------------------


def lines(*typed: str) -> tuple[list[str], Callable[[], Awaitable[str]]]:
    left = list(typed)
    read: list[str] = []

    async def read_line() -> str:
        text = left.pop(0) if left else ""
        read.append(text)
        return text

    return read, read_line


def test_on_a_terminal_the_person_chooses_and_a_site_is_remembered_for_the_run() -> None:
    read, read_line = lines("maybe\n", "s\n", "\n", "D\n")
    err = io.StringIO()
    consent = terminal_consent(allow_fetch=False, interactive=True, err=err, read_line=read_line)

    async def decide() -> list[Decision]:
        return [
            await consent("f1", "http://wiki.example/a"),
            await consent("f2", "http://wiki.example/b"),
            await consent("f3", "http://other.example/"),
        ]

    assert asyncio.run(decide()) == [
        Decision.ALLOW_SITE,
        Decision.ALLOW_REMEMBERED,
        Decision.DENY,  # Enter alone denies
    ]
    shown = err.getvalue()
    assert "http://wiki.example/a" in shown and "site: http://wiki.example:80" in shown
    assert "Please type o, s or d" in shown
    assert "http://wiki.example/b" not in shown
    assert read == ["maybe\n", "s\n", "\n"]


def test_at_the_end_of_input_the_answer_is_no() -> None:
    _, read_line = lines()
    consent = terminal_consent(
        allow_fetch=False, interactive=True, err=io.StringIO(), read_line=read_line
    )
    assert asyncio.run(consent("f1", "http://wiki.example/")) is Decision.DENY


@pytest.mark.parametrize(
    ("allow_fetch", "interactive", "expected"),
    [
        (True, True, Decision.ALLOW_FLAG),
        (True, False, Decision.ALLOW_FLAG),
        (False, False, Decision.DENY_UNATTENDED),
    ],
)
def test_without_asking(allow_fetch: bool, interactive: bool, expected: Decision) -> None:
    read, read_line = lines("o\n")
    err = io.StringIO()
    consent = terminal_consent(
        allow_fetch=allow_fetch, interactive=interactive, err=err, read_line=read_line
    )
    assert asyncio.run(consent("f1", "http://wiki.example/")) is expected
    assert read == [] and err.getvalue() == ""
