"""The immutable payloads the bridge's signals carry to the GUI thread.

Each ``sig_<subject>_<event>`` signal of
:class:`~imprint_desktop.background.bridge.Bridge` carries exactly one of these frozen
dataclasses, built on the loop thread and read on the GUI thread, so nothing is shared mutably
across threads. Research events themselves (:mod:`imprint_desktop.core.research.events`) are
already frozen and travel inside :class:`ReplyEvent` unchanged.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used (loop thread, event handlers): startup stays light
    from imprint_desktop.core.history import ConversationSummary, StoredReply
    from imprint_desktop.core.research import events as ev


class Outcome(enum.Enum):
    """How a job ended: every job ends in exactly one of these (replies, index updates, downloads
    and hub jobs alike)."""

    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ReplyOpened:
    """A reply has begun: its question is saved and research is about to start."""

    reply_id: int  # the bridge's call number ("latest wins")
    conversation_id: int
    stored_id: int  # the reply's row in the history
    conversation_created: bool = False
    workspace: str | None = None  # the folder it researches (its citations open from it)


@dataclass(frozen=True, slots=True)
class ReplyPreparing:
    """What has to happen before research time starts (loading a model, updating the index)."""

    reply_id: int
    what: str


@dataclass(frozen=True, slots=True)
class ReplyEvent:
    """One research event of reply ``reply_id``."""

    reply_id: int
    event: ev.Event


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """The model wants to fetch ``url`` (tool call ``call_id``): the person decides, research
    time paused. ``site`` is the scheme, host and port a "this site" decision would allow, the host
    in its ASCII form (a look-alike name shows as the ``xn--`` name it is). ``redirected_from``: the
    allowed address that redirects to ``url``, on another site ("" for the model's own request)."""

    reply_id: int
    call_id: str
    url: str
    site: str
    redirected_from: str = ""


@dataclass(frozen=True, slots=True)
class ReplyEnded:
    """The one terminal payload of a reply: finished (an answer or the fallback), failed, cancelled.

    ``result`` is present whenever the engine produced one (also for a reply stopped with Stop,
    whose evidence is kept); ``message`` is a sentence for the person when the reply failed.
    """

    reply_id: int
    outcome: Outcome
    result: ev.ReplyResult | None = field(default=None, compare=False)
    message: str = ""
    conversation_id: int | None = None
    stored_id: int | None = None


class ModelState(enum.Enum):
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """The model the next reply will use, and whether it is ready."""

    state: ModelState
    description: str
    message: str = ""


class IndexStage(enum.Enum):
    """What an index job does: read the changed files (``done``/``total`` count files), give
    the passages their vectors in the background (they count passages), or give them the better
    embedder's vectors too, while no reply runs (passages: "Improving search")."""

    FILES = "files"
    MEANING = "meaning"
    IMPROVING = "improving"


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """Progress of a workspace index update; ``outcome`` is set once, when it ends.

    At the end, ``problems`` says what the index could not fully use as a status line ("3 files
    have no text layer · 1 file could not be read") and ``details`` names each file and why.
    Before it, a ``message`` says the job waits for another Imprint's indexing of the folder."""

    root: str
    done: int
    total: int
    path: str = ""
    outcome: Outcome | None = None
    message: str = ""
    stage: IndexStage = IndexStage.FILES
    problems: str = ""
    details: tuple[str, ...] = ()
    #: Changes the folders' watch saw that wait behind this update (paths).
    pending: int = 0
    #: At the end: more of the folder is read right after (a whole reading that gave way to the
    #: files saved meanwhile goes on, or more changes wait): it is not read yet.
    more: bool = False


@dataclass(frozen=True, slots=True)
class IndexStanding:
    """A question is answered from the index as it stands while the background indexing is
    behind; ``message`` says so (what the search tool also tells the model)."""

    message: str


@dataclass(frozen=True, slots=True)
class ConversationList:
    """The conversations matching ``search``, newest first."""

    search: str
    conversations: tuple[ConversationSummary, ...]


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """One conversation's saved replies (questions, answers, evidence, interrupted marks)."""

    conversation_id: int
    replies: tuple[StoredReply, ...]
    request: int = 0  # the number the request was made with, so a stale answer can be ignored


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """The saved trace of one reply, for the research record and bug reports."""

    stored_id: int
    lines: tuple[dict[str, object], ...]


@dataclass(frozen=True, slots=True)
class ConnectionTest:
    """The result of trying the remote server with the current settings."""

    ok: bool
    message: str


@dataclass(frozen=True, slots=True)
class JobProblem:
    """Something that went wrong outside a reply, as a sentence the person can act on."""

    message: str


@dataclass(frozen=True, slots=True)
class FileSaved:
    """A file the person asked for (an exported conversation, a trace) was written."""

    path: str
    what: str


ReplyPayload = ReplyOpened | ReplyPreparing | ReplyEvent | ConsentRequest | ReplyEnded
"""What one reply sends; each carries its ``reply_id``, so a superseded reply's are dropped."""

Payload = (
    ReplyPayload
    | ModelStatus
    | IndexStatus
    | IndexStanding
    | ConversationList
    | ConversationRecord
    | TraceRecord
    | FileSaved
    | ConnectionTest
    | JobProblem
)
"""Everything the loop thread sends the GUI thread."""

Emit = Callable[[Payload], None]
"""How loop-thread work hands a payload to the bridge (thread-safe)."""
