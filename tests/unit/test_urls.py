"""core.urls: one reading of an http(s) address, and one redaction policy for every caller."""

from __future__ import annotations

import pytest

from imprint_desktop.core.errors import FetchError
from imprint_desktop.core.providers.remote.server import address_problem
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.fetch import check_url
from imprint_desktop.core.tools.words import short_url
from imprint_desktop.core.urls import (
    NOT_A_URL,
    NotHttpUrl,
    host_span,
    http_url,
    loose_parts,
    proxy_url,
    public_url,
    redacted_url,
    without_password,
)
from imprint_desktop.settings.checks import check_http_url, check_proxy_url
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


@pytest.mark.parametrize(
    "text",
    [
        "http://proxy:3128",
        "HTTPS://Proxy.example",
        "socks5://127.0.0.1:1080",
        "socks5h://me:hunter2@[::1]:1080",
    ],
)
def test_a_proxy_is_read_like_a_server_with_socks_allowed_too(text: str) -> None:
    assert proxy_url(text).hostname
    assert check_proxy_url(text) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("proxy:3128", "scheme"),
        ("socks4://proxy:1080", "scheme"),
        ("ftp://proxy", "scheme"),
        ("http://:3128", "host"),
        ("socks5://user@", "host"),
        ("http://[::1:3128", "unreadable"),  # an unclosed "[": a reason, not a crash
        ("socks5://proxy:70000", "unreadable"),
        ("http://proxy:port", "unreadable"),
    ],
)
def test_what_is_not_a_proxy_says_why(text: str, reason: str) -> None:
    with pytest.raises(NotHttpUrl) as raised:
        proxy_url(text)
    assert raised.value.reason == reason
    assert check_proxy_url(text) == (
        f"must be a proxy address such as http://proxy:3128 (got {text!r})"
    )


def test_a_socks_address_is_a_proxy_not_a_server() -> None:
    with pytest.raises(NotHttpUrl) as raised:
        http_url("socks5://127.0.0.1:1080")
    assert (raised.value.reason, raised.value.scheme) == ("scheme", "socks5")
    assert check_http_url("socks5://127.0.0.1:1080") is not None


# --- where the host is written ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "span"),
    [
        ("http://example.org/a", (7, 18)),
        ("https://trusted.example@evil.example:8443/?x=1", (24, 36)),  # after the last "@"
        ("http://ada:p@ss@wiki.example/v1", (16, 28)),
        ("http://user:pw@[::1]:8080/x", (15, 20)),  # brackets and all, no port
        ("http://EXAMPLE.org:80", (7, 18)),  # as written, not lower case
        ("http://h/", (7, 8)),  # not the "h" of the scheme
        ("http://t/x", (7, 8)),
        ("http://a[::1]:80/", (8, 13)),  # urlsplit reads the address in brackets
        ("  http://ex.org/", (9, 15)),  # urlsplit skips leading spaces
        ("ht\ttp://ex.org/", (8, 14)),  # and drops a tab outside the host
        ("//ex.org/x", (2, 8)),
    ],
)
def test_the_host_is_found_where_it_is_written(url: str, span: tuple[int, int]) -> None:
    assert host_span(url) == span


@pytest.mark.parametrize(
    "url",
    [
        "ex.org/x",  # no "//": no host
        "http:///x",
        "http://[::1/x",  # does not parse
        "http://ex.org:99999/",
        "http://ex\t.org/",  # urlsplit reads "ex.org", which is not written anywhere
        "http:/\t/a.example/?//a.example",  # read from the first "//" it is somewhere else
        "http://u]@[::1/",
    ],
)
def test_no_host_is_claimed_where_none_is_written_as_read(url: str) -> None:
    assert host_span(url) is None


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


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://example.org/a/b?q=1", "example.org/…"),
        ("https://example.org", "example.org"),
        ("ftp://files.example.org/x", "files.example.org/…"),  # any scheme a model may write
        ("http://h:99999/x", "h/…"),  # a port no client would take is still shown by its host
        ("http://[::1/x", "http://[::1/x"),  # cannot be split: shown as written
        ("not a url", "not a url"),
    ],
)
def test_an_address_a_model_wrote_is_shown_by_its_host(url: str, shown: str) -> None:
    assert short_url(url) == shown


def test_loose_parts_splits_without_checking_scheme_or_port() -> None:
    parts = loose_parts(" ftp://user@files.example.org:99999/x ")
    assert parts is not None
    assert (parts.scheme, parts.hostname, parts.path) == ("ftp", "files.example.org", "/x")
    assert loose_parts("http://[::1/x") is None
