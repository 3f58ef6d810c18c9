"""core.urls: one reading of an http(s) address, and one redaction policy for every caller."""

from __future__ import annotations

import pytest

from imprint_desktop.core.errors import FetchError
from imprint_desktop.core.providers.remote_config import address_problem
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.fetch import check_url
from imprint_desktop.core.urls import (
    NOT_A_URL,
    NotHttpUrl,
    http_url,
    public_url,
    redacted_url,
    without_password,
)
from imprint_desktop.settings.schema import check_http_url
from tests.support.settings import make_config, setting_values

SECRETS = ("hunter2", "s3cr3t", "k3y", "t0ken")

# Configured addresses that hide a credential in each place one can hide, well formed or not.
HOSTILE = [
    "https://alice:s3cr3t@llm.example:8443/v1?api_key=k3y#t0ken",
    "http://bob:hunter2@[::1]:3128",
    "http://bob:hunter2@[fe80::1%25eth0]:8080/v1/",
    "http://ada:p@hunter2@wiki.example/v1",  # an "@" inside the password
    "http://hunter2@llm.example/v1",  # a token as the user name
    "http://me:hunter2@127.0.0.1:99999/v1?k=k3y",  # port out of range
    "http://me:hunter2@[::1/v1?k=k3y#t0ken",  # unclosed bracket
    "http://me:hunter2@host:abc/v1",  # port not a number
    "me:hunter2@host:8080/v1?api_key=k3y",  # no scheme at all
    "https://llm.example/v1?key=k3y&&mode#access_token=t0ken",
]


# --- reading an address -------------------------------------------------------------------------


def test_an_http_address_is_read_into_its_parts() -> None:
    parts = http_url("HTTPS://LLM.Example:8443/v1?x=1")
    assert (parts.scheme, parts.hostname, parts.port, parts.path) == (
        "https",
        "llm.example",
        8443,
        "/v1",
    )
    ipv6 = http_url("http://[::1]:8080/v1")
    assert (ipv6.hostname, ipv6.port) == ("::1", 8080)


@pytest.mark.parametrize(
    ("text", "reason", "words"),
    [
        ("ftp://127.0.0.1/v1", "scheme", "it must start with http:// or https://"),
        ("127.0.0.1:8080/v1", "scheme", "it must start with http:// or https://"),
        ("", "scheme", "it must start with http:// or https://"),
        ("   ", "scheme", "it must start with http:// or https://"),
        ("http:///v1", "host", "it names no server"),
        ("http://:8080/v1", "host", "it names no server"),
        ("http://user@/v1", "host", "it names no server"),
        ("http://[::1/v1", "unreadable", "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/v1", "unreadable", "Port out of range"),
        ("http://127.0.0.1:http/v1", "unreadable", "Port could not be cast"),
    ],
)
def test_what_is_not_an_http_address_says_why(text: str, reason: str, words: str) -> None:
    with pytest.raises(NotHttpUrl) as raised:
        http_url(text)
    assert raised.value.reason == reason
    assert words in str(raised.value)


def test_a_refused_scheme_is_named() -> None:
    with pytest.raises(NotHttpUrl) as raised:
        http_url("FTP://host/file")
    assert raised.value.scheme == "ftp"
    with pytest.raises(NotHttpUrl) as none:
        http_url("//host/file")
    assert none.value.scheme == ""


@pytest.mark.parametrize(
    "text",
    [
        "https://api.example.org/v1",
        "HTTP://Example.ORG:8080/v1",
        "http://[::1]:8080/v1",
        "http://bücher.example/v1",
        "ftp://127.0.0.1/v1",
        "localhost:8080",
        "http:///v1",
        "http://:8080/v1",
        "http://[::1/v1",
        "http://127.0.0.1:99999/v1",
    ],
)
def test_settings_the_provider_and_fetch_url_accept_the_same_addresses(text: str) -> None:
    accepted = address_problem(text) is None
    assert (check_http_url(text) is None) == accepted
    try:
        check_url(text)
    except FetchError:
        fetchable = False
    else:
        fetchable = True
    assert fetchable == accepted


def test_each_caller_words_a_refusal_its_own_way() -> None:
    assert check_http_url("http://[::1/v1") == (
        "must be an http:// or https:// address (got 'http://[::1/v1')"
    )
    assert address_problem("http:///v1") == "it names no server"
    with pytest.raises(FetchError, match=r"^Only http:// and https:// URLs can be fetched"):
        check_url("ftp://127.0.0.1/v1")
    with pytest.raises(FetchError, match=r"has no host name\.$"):
        check_url("http:///v1")
    with pytest.raises(FetchError, match=r"is not a valid URL \(Port out of range 0-65535\)\.$"):
        check_url("http://127.0.0.1:99999/")


# --- shown to people ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://alice:s3cr3t@LLM.example:8443/v1/?api_key=k3y#t0ken",
            "https://llm.example:8443/v1",
        ),
        ("http://bob:hunter2@[::1]:3128", "http://[::1]:3128"),
        ("http://[FE80::1%25eth0]:8080/v1", "http://[fe80::1%25eth0]:8080/v1"),
        ("http://ada:p@hunter2@wiki.example/v1", "http://wiki.example/v1"),
        ("http://me:hunter2@127.0.0.1:99999/v1?k=q", "http://127.0.0.1:99999/v1"),
        ("http://me:hunter2@[::1/v1?k=q#f", "http://[::1/v1"),
        ("127.0.0.1:8080/v1/", "127.0.0.1:8080/v1"),
        ("me:hunter2@host:8080/v1?api_key=k3y", "host:8080/v1"),
        ("http:///v1", "http:///v1"),
        ("", ""),
    ],
)
def test_a_public_address_has_no_userinfo_query_or_fragment(url: str, shown: str) -> None:
    assert public_url(url) == shown


@pytest.mark.parametrize("url", HOSTILE)
def test_no_form_of_an_address_shows_a_credential(url: str) -> None:
    # The trace redacts only values with "://" (a setting cannot hold a scheme-less address).
    forms = [public_url(url), redacted_url(url)] if "://" in url else [public_url(url)]
    for form in forms:
        for secret in SECRETS:
            assert secret not in form, (url, form)


# --- recorded in a trace ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "recorded"),
    [
        (
            "https://alice:s3cr3t-token@llm.example:8443/v1?api_key=k3y&mode",
            "https://***@llm.example:8443/v1?api_key=***&mode",
        ),
        ("http://bob:hunter2@[::1]:3128", "http://***@[::1]:3128"),
        ("http://alice@Host.example/v1", "http://***@host.example/v1"),
        ("http://Host.example/v1/", "http://Host.example/v1/"),
        ("https://h.example/v1?a=1&&b=&c#access_token=t0ken", "https://h.example/v1?a=***&b=***&c"),
        ("http://me:hunter2@[::1/v1", NOT_A_URL),
        ("http://me:hunter2@host:99999/v1", NOT_A_URL),
    ],
)
def test_a_configured_address_is_recorded_with_its_credentials_marked(
    url: str, recorded: str
) -> None:
    assert redacted_url(url) == recorded


def test_only_url_valued_settings_are_redacted_in_the_trace() -> None:
    from imprint_desktop.core.research import events as ev

    given = {
        "remote.base_url": "http://bob:hunter2@[::1]:3128/v1?key=k3y",
        "remote.model": "qwen:7b@q4",
        "workspace.path": "/home/bob/docs?",
        "chat.max_tokens": 2048,
    }
    line = trace_line(ev.ReplyStarted(0.0, "Q?", make_config(given), "remote"))
    assert line is not None
    assert line["settings"] == {
        **setting_values(given),
        "remote.base_url": "http://***@[::1]:3128/v1?key=***",
    }


@pytest.mark.parametrize(
    ("url", "recorded"),
    [
        ("http://ada:hunter2@wiki.example/p?q=1", "http://ada:***@wiki.example/p?q=1"),
        ("http://ada:p@ss@wiki.example/p", "http://ada:***@wiki.example/p"),
        ("http://ada:hunter2@[::1]:8080/p#part", "http://ada:***@[::1]:8080/p#part"),
        ("http://ada@wiki.example/p?q=1", "http://ada@wiki.example/p?q=1"),
        ("http://ada:@wiki.example/", "http://ada:@wiki.example/"),
        ("http://wiki.example/?d=x", "http://wiki.example/?d=x"),
        ("http://ada:hunter2@[::1/p", NOT_A_URL),
    ],
)
def test_an_address_the_model_asked_for_is_recorded_as_asked_but_its_password(
    url: str, recorded: str
) -> None:
    assert without_password(url) == recorded
