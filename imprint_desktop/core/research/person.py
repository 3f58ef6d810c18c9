"""Asking the person during research: an ``ask_user`` question, or consent to fetch a page.

Research time pauses while the person thinks (DESIGN §1, §2), and every wait is traced as a
``user_wait`` line — an answer to a question and a decision to fetch alike, so the trace's waits
add up to the result's ``user_wait_seconds`` (the time research did not count) — and a fetch
decision also as a ``consent`` line. Who is asked — the
window's card, the terminal, nobody — is the caller's: :data:`AskPerson` and
:data:`~imprint_desktop.core.consent.Consent`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from imprint_desktop.core.consent import Consent, Decision
from imprint_desktop.core.errors import Cancelled
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.reply import Reply

#: Asks the person the question of an ``ask_user`` call (its id, the question) and returns their
#: answer; the id ties the answer to the call that asked.
AskPerson = Callable[[str, str], Awaitable[str]]


class Person:
    """The person, as research reaches them (see the module docstring)."""

    def __init__(self, reply: Reply, ask: AskPerson | None, consent: Consent | None) -> None:
        self.reply = reply
        self._ask = ask
        self._consent = consent

    @property
    def can_be_asked(self) -> bool:
        """Whether questions reach anyone (``ask_user`` is offered only then)."""
        return self._ask is not None

    async def ask(self, call_id: str, question: str) -> str:
        """Ask the person; research time pauses until they answer (DESIGN §1)."""
        reply = self.reply
        if self._ask is None:
            return ""
        reply.clock.pause()
        reply.emit(ev.QuestionAsked(reply.now_t(), call_id, question))
        reply.emit_budget()
        waited_from = reply.clock_now()
        answer = ""
        try:
            answer = await self._ask(call_id, question)
        finally:
            # Also when Stop ends the wait: the trace keeps every wait (DESIGN §5).
            reply.clock.resume()
            reply.emit(ev.UserWait(reply.now_t(), reply.clock_now() - waited_from, answer))
            reply.emit_budget()
        return answer

    async def consent(self, call_id: str, url: str, redirected_from: str = "") -> Decision:
        """May call ``call_id`` fetch ``url`` (``redirected_from``: the allowed address that
        redirects there, on another site)? Research time pauses while the person decides, and the
        decision is traced; it is not progress (DESIGN §2)."""
        reply = self.reply
        if self._consent is None:
            decision, seconds = Decision.DENY_UNATTENDED, 0.0
        else:
            reply.clock.pause()
            reply.emit_budget()
            waited_from = reply.clock_now()
            ask = self._consent
            stopped = False
            try:
                decision = await (
                    ask(call_id, url, redirected_from) if redirected_from else ask(call_id, url)
                )
            except (asyncio.CancelledError, Cancelled):
                stopped = True
                raise
            finally:
                reply.clock.resume()
                seconds = reply.clock_now() - waited_from
                reply.emit(ev.UserWait(reply.now_t(), seconds, ""))
                if stopped:  # Stop ended the wait: the trace still says what became of the fetch
                    self._decided(call_id, url, Decision.CANCELLED, seconds)
        self._decided(call_id, url, decision, seconds)
        return decision

    def _decided(self, call_id: str, url: str, decision: Decision, seconds: float) -> None:
        reply = self.reply
        reply.emit(ev.ConsentDecided(reply.now_t(), call_id, url, decision, seconds))
        reply.emit_budget()
