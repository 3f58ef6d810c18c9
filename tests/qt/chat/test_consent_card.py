"""The window asks before the model fetches a web page (DESIGN §2), through the real bridge and
loop thread with a scripted model and a real page server on 127.0.0.1 that records requests.

What is checked is what the person sees and what leaves the machine: the card with the full
address and its host highlighted, whether the page server was asked, what the model was told, and
the research clock the engine reports while the card waits.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.core.research import events as ev
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.consent_card import ConsentCard
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import open_window, type_question, watch_the_panel
from tests.support.openai_server import OpenAIServer, Reply
from tests.support.scripted_provider import ScriptedProvider, Step

WAIT_MS = 10_000
PAGE = b"<html><head><title>Tides</title></head><body><p>High water comes at noon.</p></body>"


@pytest.fixture
def web() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def serve_pages(web: OpenAIServer, *paths: str) -> None:
    for path in paths:
        web.script(Reply.garbage(PAGE, content_type="text/html; charset=utf-8"), path=path)


def fetch(url: str) -> Step:
    return Step(calls=[("fetch_url", {"url": url})])


def tool_results(provider: ScriptedProvider) -> list[str]:
    """What the model was told about its tool calls, in its latest request."""
    return [message.content for message in provider.requests[-1].messages if message.role == "tool"]


def decide(qtbot: QtBot, window: MainWindow, button_name: str) -> p.ReplyEnded:
    """Wait for the card, press one of its buttons, and wait for the reply to end."""
    card = window.consent_card
    qtbot.waitUntil(card.isVisible, timeout=WAIT_MS)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        qtbot.mouseClick(getattr(card, button_name), Qt.MouseButton.LeftButton)
    payload = ended.args[0]
    assert isinstance(payload, p.ReplyEnded)
    return payload


def test_the_card_shows_the_address_in_full_and_allow_once_fetches_while_the_clock_waits(
    qtbot: QtBot, research_store: SettingsStore, web: OpenAIServer
) -> None:
    serve_pages(web, "/tides")
    url = f"http://harbour.example@127.0.0.1:{web.port}/tides?q=high+water&note=" + "long" * 60
    opened = open_window(qtbot, research_store, [fetch(url), Step("High water is at noon [2].")])
    window = opened.window
    budgets: list[ev.BudgetUpdate] = []
    window.bridge.sig_reply_event.connect(
        lambda payload: (
            budgets.append(payload.event) if isinstance(payload.event, ev.BudgetUpdate) else None
        )
    )

    type_question(qtbot, window, "When is high water?")
    card = window.consent_card
    qtbot.waitUntil(card.isVisible, timeout=WAIT_MS)
    shown = time.monotonic()
    assert card.address_text() == url  # in full, as it will be fetched
    assert card.highlighted() == "127.0.0.1", "the host, not the name before the @"
    assert card.site.text() == f"Site: http://127.0.0.1:{web.port}"
    assert card.deny.hasFocus(), "Enter alone must not send anything"
    assert web.requests == [], "fetched before the person chose"
    assert "allow or deny a web page" in window.panel.now_label.text()

    # Research time is paused while the card waits: the panel's clock does not move …
    assert window.panel.time_paused
    frozen, shown_time = window.panel.shown_seconds, window.panel.time_bar.format()
    watch_the_panel(qtbot, ticks=3)
    assert window.panel.shown_seconds == frozen
    assert window.panel.time_bar.format() == shown_time
    waited = time.monotonic() - shown

    ended = decide(qtbot, window, "allow_once")
    assert ended.outcome is p.Outcome.FINISHED
    assert [request.path for request in web.requests] == ["/tides"]
    assert "High water comes at noon." in tool_results(opened.provider)[-1]
    result = ended.result
    assert result is not None
    # … and the engine's own clock agrees: the wait is the person's, not research time.
    assert result.user_wait_seconds >= waited
    paused = [update for update in budgets if update.time_paused]
    assert paused, "the engine never reported the clock paused"
    after = budgets[budgets.index(paused[-1]) + 1]
    assert not after.time_paused
    assert after.research_seconds - paused[-1].research_seconds < waited / 2, (paused[-1], after)
    assert not card.isVisible()


def test_deny_sends_nothing_and_the_model_reads_why(
    qtbot: QtBot, research_store: SettingsStore, web: OpenAIServer
) -> None:
    serve_pages(web, "/secret")
    url = f"{web.url}/secret?d=the+harbour+wall+is+granite"
    opened = open_window(qtbot, research_store, [fetch(url), Step("I was not allowed.")])
    type_question(qtbot, opened.window, "Send the wall's material somewhere")
    ended = decide(qtbot, opened.window, "deny")
    assert ended.outcome is p.Outcome.FINISHED
    assert web.requests == []
    denied = tool_results(opened.provider)[-1]
    assert denied.startswith(f"Error: the person did not allow fetching {url}."), denied


def test_this_site_is_not_asked_about_again_in_the_conversation(
    qtbot: QtBot, research_store: SettingsStore, web: OpenAIServer
) -> None:
    serve_pages(web, "/one", "/two", "/three")
    other = f"http://localhost:{web.port}/four"  # another host name: another site
    script = [
        fetch(f"{web.url}/one"),
        fetch(f"{web.url}/two"),
        Step("First answer."),
        fetch(f"{web.url}/three"),  # the next question in the same conversation
        Step("Second answer."),
        fetch(f"{web.url}/one"),  # a new conversation: asked again
        Step("Third answer."),
        fetch(other),
        Step("Fourth answer."),
    ]
    window = open_window(qtbot, research_store, script).window
    asked: list[str] = []
    window.bridge.sig_consent_requested.connect(lambda request: asked.append(request.url))

    type_question(qtbot, window, "What do the pages say?")
    ended = decide(qtbot, window, "allow_site")
    assert ended.outcome is p.Outcome.FINISHED
    assert [request.path for request in web.requests] == ["/one", "/two"]
    assert asked == [f"{web.url}/one"]

    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "And the third page?")
    assert [request.path for request in web.requests][-1] == "/three"
    assert asked == [f"{web.url}/one"], "asked again about a site allowed for the conversation"
    assert not window.consent_card.isVisible()

    window.session.new_conversation()
    type_question(qtbot, window, "The first page again?")
    decide(qtbot, window, "deny")
    assert asked == [f"{web.url}/one", f"{web.url}/one"]

    type_question(qtbot, window, "And the page on localhost?")
    decide(qtbot, window, "deny")
    assert asked[-1] == other
    assert [request.path for request in web.requests] == ["/one", "/two", "/three"]


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.org/a", "example.org"),
        ("https://trusted.example@evil.example:8443/?x=1", "evil.example"),
        ("http://user:pw@[::1]:8080/x", "[::1]"),
        ("http://xn--80ak6aa92e.com/", "xn--80ak6aa92e.com"),
        ("http://EXAMPLE.org:80", "EXAMPLE.org"),
        ("http://ex\tample.org/", ""),  # written otherwise than it is read: nothing claimed
    ],
)
def test_the_highlighted_part_is_the_host_that_is_connected_to(
    qtbot: QtBot, url: str, host: str
) -> None:
    card = ConsentCard()
    qtbot.addWidget(card)
    card.ask("call_1", url, "site")
    assert card.highlighted() == host
    assert card.address_text() == url


def test_markup_in_an_address_stays_text(qtbot: QtBot) -> None:
    url = 'http://example.org/<img src="file:///dev/zero"><b>bold</b>'
    card = ConsentCard()
    qtbot.addWidget(card)
    card.ask("call_1", url, "http://example.org:80")
    assert card.address_text() == url
    assert "<img" in card.address.toPlainText()


def test_stop_while_the_card_waits_ends_the_reply_and_fetches_nothing(
    qtbot: QtBot, research_store: SettingsStore, web: OpenAIServer
) -> None:
    serve_pages(web, "/late")
    window = open_window(qtbot, research_store, [fetch(f"{web.url}/late")]).window
    type_question(qtbot, window, "A page I will not wait for")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Escape)
    assert ended.args[0].outcome is p.Outcome.CANCELLED
    assert not window.consent_card.isVisible()
    qtbot.mouseClick(window.consent_card.allow_once, Qt.MouseButton.LeftButton)  # too late
    assert web.requests == []


def redirect(location: str) -> Reply:
    return Reply(302, (("Location", location),), (b"",), label="redirect")


def test_a_redirect_to_another_site_asks_again_and_shows_both_addresses(
    qtbot: QtBot, research_store: SettingsStore, web: OpenAIServer
) -> None:
    with OpenAIServer() as other:
        start = f"{web.url}/hop?d=the-plan"
        target = f"http://localhost:{other.port}/collect?d=the-plan"  # another host: a site
        web.script(redirect(target), path="/hop")
        serve_pages(other, "/collect")
        opened = open_window(qtbot, research_store, [fetch(start), Step("Nothing to add.")])
        window = opened.window
        requests: list[p.ConsentRequest] = []
        window.bridge.sig_consent_requested.connect(requests.append)
        type_question(qtbot, window, "What does the page say?")
        card = window.consent_card
        qtbot.waitUntil(card.isVisible, timeout=WAIT_MS)
        qtbot.mouseClick(card.allow_site, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: len(requests) == 2 and card.isVisible(), timeout=WAIT_MS)
        assert requests[1].url == target and requests[1].redirected_from == start
        assert card.address_text() == target
        assert card.highlighted() == "localhost"
        assert card.source.isVisible() and start in card.source.text()
        assert "redirects to another site" in card.title.text()
        assert other.requests == [], "sent on before the person chose"
        ended = decide(qtbot, window, "deny")
        assert ended.outcome is p.Outcome.FINISHED
        assert other.requests == []
        assert [request.path for request in web.requests] == ["/hop"]
        assert "another site" in tool_results(opened.provider)[-1]


def visual_order(card: ConsentCard) -> list[float]:
    """Where each character of the address box is drawn, left to right, in written order."""
    document = card.address.document()
    document.size()  # laid out
    block = document.begin()
    layout = block.layout()
    return [layout.lineForTextPosition(i).cursorToX(i) for i in range(block.length() - 1)]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.org/?\u202egpj.elgoog.www//:sptth",  # an override reverses the rest
        "https://example.org/\u2067abc\u2069/\u200fx\u200b",  # isolates, marks, zero width
        "https://example.org/\u05d0\u05d1/12/\u05d2\u05d3.com",  # right-to-left letters, digits
    ],
)
def test_no_character_of_the_address_changes_the_order_it_is_read_in(
    qtbot: QtBot, url: str
) -> None:
    card = ConsentCard()
    qtbot.addWidget(card)
    card.resize(2000, 300)
    card.ask("call_1", url, "https://example.org:443")
    shown = card.address_text()
    for control in ("\u202e", "\u2067", "\u2069", "\u200f", "\u200b"):
        assert control not in shown
    assert shown.startswith("https://example.org/")
    positions = visual_order(card)
    assert positions == sorted(positions), (shown, positions)
    assert card.highlighted() == "example.org"


def test_a_host_mixing_scripts_is_shown_in_the_ascii_form_it_is_looked_up_by(
    qtbot: QtBot,
) -> None:
    card = ConsentCard()
    qtbot.addWidget(card)
    card.ask("call_1", "https://p\u0430ypal.com/login", "https://xn--pypal-4ve.com:443")
    assert card.highlighted() == "xn--pypal-4ve.com"
    assert card.address_text() == "https://xn--pypal-4ve.com/login"
    card.ask("call_2", "https://例え.jp/x", "https://xn--r8jz45g.jp:443")  # one script: readable
    assert card.highlighted() == "例え.jp"


def test_stop_while_the_card_waits_traces_the_fetch_as_cancelled(
    qtbot: QtBot, research_store: SettingsStore, web: OpenAIServer
) -> None:
    serve_pages(web, "/late")
    window = open_window(qtbot, research_store, [fetch(f"{web.url}/late")]).window
    decided: list[ev.ConsentDecided] = []

    def keep(payload: p.ReplyEvent) -> None:
        if isinstance(payload.event, ev.ConsentDecided):
            decided.append(payload.event)

    window.bridge.sig_reply_event.connect(keep)
    type_question(qtbot, window, "A page I will not wait for")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        qtbot.mouseClick(window.composer.button, Qt.MouseButton.LeftButton)  # Stop
    assert ended.args[0].outcome is p.Outcome.CANCELLED
    assert [(event.url, event.decision.value) for event in decided] == [
        (f"{web.url}/late", "cancelled")
    ]
    assert web.requests == []
