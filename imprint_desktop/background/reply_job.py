"""One reply, from the question to the saved answer, as one object on the loop thread.

A :class:`ReplyJob` holds everything one reply has: its id, question, settings and Stop token, the
conversation it belongs to (made when its question starts a new one), its history row, and what it
waits for from the person — the answer to an ``ask_user`` call and the decision on a ``fetch_url``
call, each under the call's id. An answer for a call that is not waiting (a late click on an old
card, a reply already over) is dropped.

:meth:`ReplyJob.run` runs the reply with the one reply runner of ``core``
(:func:`~imprint_desktop.core.assistant.run_reply`, which keeps its history row) and is the
window's one error policy: whatever happens, the reply ends with exactly one
:class:`~.payloads.ReplyEnded` — finished, failed or cancelled.

The loop thread gives a reply what it uses — the history store, the services kept between replies,
the memory of conversations — and a reply calls nothing above it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Generic, TypeVar

from imprint_desktop.background import payloads as p
from imprint_desktop.background.error_words import sentence
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import AllowedSites, Consent, Decision, remembering, site_of
from imprint_desktop.core.errors import Cancelled

if TYPE_CHECKING:  # imported on the loop thread, where they are used, to keep startup fast
    from imprint_desktop.background.services import KeptServices
    from imprint_desktop.core.config import Config
    from imprint_desktop.core.history import HistoryStore
    from imprint_desktop.core.research import events as ev

log = logging.getLogger(__name__)

T = TypeVar("T")


class Waiting(Generic[T]):
    """What a reply waits for from the person, one future per tool call id (loop thread only)."""

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[T]] = {}

    async def wait(self, call_id: str) -> T:
        """Wait for :meth:`deliver` to ``call_id``; cancelled with the reply by Stop."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._futures[call_id] = future
        try:
            return await future
        finally:
            del self._futures[call_id]

    def deliver(self, call_id: str, value: T) -> bool:
        """Hand ``value`` to the wait for ``call_id``; False (and dropped) when none waits."""
        future = self._futures.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(value)
        return True


class ConversationMemory:
    """What this process remembers of each conversation between its replies (loop thread only):
    the sites the person allowed in it. Its questions and answers are the history's."""

    def __init__(self) -> None:
        self._sites: dict[int, AllowedSites] = {}

    def forget(self, conversation_id: int) -> None:
        """Drop all of a deleted conversation: SQLite may give its id to a new one, which asks
        about every site again."""
        self._sites.pop(conversation_id, None)

    def sites(self, conversation_id: int) -> AllowedSites:
        """The sites allowed "for this conversation", kept for as long as the window is open and
        not asked about again."""
        return self._sites.setdefault(conversation_id, AllowedSites())


def require(history: HistoryStore | None) -> HistoryStore:
    """The history store, or the error that says it could not be opened."""
    if history is None:
        raise RuntimeError("The chat history is not available.")
    return history


class ReplyJob:
    """One reply: its typed state, its waits for the person, and its one error policy."""

    def __init__(
        self,
        reply_id: int,
        *,
        question: str,
        conversation_id: int | None,
        config: Config,
        cancel: CancelToken,
        emit: p.Emit,
    ) -> None:
        self.reply_id = reply_id  # the bridge's call number ("latest wins")
        self.question = question
        self.conversation_id = conversation_id  # None until a new conversation is made
        self.config = config  # the settings it runs under, as they were when it started
        self.cancel = cancel
        self._emit = emit
        self._stored_id: int | None = None  # the reply's history row, once saved
        self._answers: Waiting[str] = Waiting()  # ask_user calls
        self._decisions: Waiting[Decision] = Waiting()  # fetch_url calls

    def answer(self, call_id: str, text: str) -> bool:
        """The person's answer to ``ask_user`` call ``call_id``; False when none waits."""
        return self._answers.deliver(call_id, text)

    def decide(self, call_id: str, decision: Decision) -> bool:
        """The person's decision on ``fetch_url`` call ``call_id``; False when none waits."""
        return self._decisions.deliver(call_id, decision)

    async def run(
        self,
        history: HistoryStore | None,
        services: KeptServices,
        memory: ConversationMemory,
    ) -> None:
        """Research the question and report how the reply ended: the reply's one error policy."""
        if self.cancel.cancelled:  # superseded before it could start
            self._end(p.Outcome.CANCELLED)
            return
        try:
            result = await self._research(require(history), services, memory)
        except (Cancelled, asyncio.CancelledError):  # the history row says so already
            self._end(p.Outcome.CANCELLED)
            return
        except Exception as error:
            self._end(p.Outcome.FAILED, message=sentence(error, self.config))
            return
        if result.stop_reason == "cancelled":
            self._end(p.Outcome.CANCELLED, result)
        elif result.stop_reason == "error":
            detail = (result.error or "").strip()
            self._end(
                p.Outcome.FAILED,
                result,
                f"The model failed: {detail or 'no reason given'}. The evidence found so far is "
                "kept below; try again, or choose another model in the toolbar.",
            )
        else:
            self._end(p.Outcome.FINISHED, result)

    async def _research(
        self, history: HistoryStore, services: KeptServices, memory: ConversationMemory
    ) -> ev.ReplyResult:
        from imprint_desktop.core import assistant  # noqa: PLC0415 - loop thread, not startup

        def opened(row: assistant.ReplyKept) -> None:
            self.conversation_id, self._stored_id = row.conversation, row.stored_id
            self._emit(
                p.ReplyOpened(
                    self.reply_id,
                    row.conversation,
                    row.stored_id,
                    row.conversation_created,
                    row.workspace,
                )
            )

        def consent(conversation: int | None) -> Consent:
            assert conversation is not None  # the window keeps every reply
            return remembering(self._ask_consent, memory.sites(conversation))

        front = assistant.ReplyFront(
            sink=lambda event: self._emit(p.ReplyEvent(self.reply_id, event)),
            ask=self._ask_person,
            consent=consent,
            opened=opened,
            preparing=lambda words: self._emit(p.ReplyPreparing(self.reply_id, words)),
            failure_words=lambda error: sentence(error, self.config),
        )
        return await assistant.run_reply(
            self.question,
            config=self.config,
            cancel=self.cancel,
            services=services,
            front=front,
            history=history,
            conversation=self.conversation_id,
        )

    async def _ask_person(self, call_id: str, question: str) -> str:
        """Wait for the person's answer to ``ask_user`` call ``call_id``."""
        del question  # shown through the QuestionAsked event
        return await self._answers.wait(call_id)

    async def _ask_consent(self, call_id: str, url: str, redirected_from: str = "") -> Decision:
        """Ask the window's card whether ``call_id`` may fetch ``url`` (a redirect from
        ``redirected_from``, when that is given), and wait for the decision. It comes back through
        the loop, so it cannot arrive before the wait has begun."""
        self._emit(p.ConsentRequest(self.reply_id, call_id, url, site_of(url), redirected_from))
        return await self._decisions.wait(call_id)

    def _end(
        self, outcome: p.Outcome, result: ev.ReplyResult | None = None, message: str = ""
    ) -> None:
        self._emit(
            p.ReplyEnded(
                self.reply_id, outcome, result, message, self.conversation_id, self._stored_id
            )
        )
