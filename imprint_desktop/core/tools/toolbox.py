"""The toolbox: the workspace and web tools of DESIGN §2 with their schemas, run safely.

The engine builds one :class:`Toolbox` per reply, sends :meth:`Toolbox.schemas` with its requests
and hands every call of these tools to :meth:`Toolbox.execute`, which never raises (cancellation
aside): unknown tools, malformed or wrongly typed arguments, paths leading out of the workspace,
network failures and bugs all come back as a :class:`ToolResult` with status ``error`` and a
sentence the model can act on. The toolbox calls nothing of the engine's: ``ask_user`` and
``research_sections`` are the engine's own tools, carried out by the engine.

Blocking work (index queries, file reads, note writes) runs in worker threads via
:func:`asyncio.to_thread`, so the engine's loop keeps streaming and checking its clocks. Reads are
bounded by the caller's ``timeout`` (the research time left), and a read given up on — at the
deadline, or on Stop — is told so through the call's stop event, so its worker thread does not run
on: a document in the isolated reader has its worker process ended within a few hundredths of a
second. A write is never abandoned half-way, so ``write_note`` runs to completion however little
time is left.

``fetch_url`` asks first (DESIGN §2): a URL that is never fetched (link-local, cloud metadata) is
refused without asking; otherwise, with ``tools.fetch_url_confirm`` on, the person decides. The
toolbox says which address needs a decision (:meth:`Toolbox.needs_consent`); the caller asks the
person — outside the time limit of the call, research time paused — and passes the decision to
:meth:`Toolbox.execute`. A denial is a tool error the model can read; without a decision nobody
could be asked, and the fetch is denied. A page that redirects to another site is asked about again
through the caller's ``redirect_consent`` (:mod:`.fetch`); the fetch's own deadline, not the
call's, then bounds it, so the person's time to decide is not taken from it.

Passages from notes the model wrote (:mod:`.notes`) come back labelled as such, so neither the model
nor the person takes them for the person's own documents.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from imprint_desktop.core.config import ToolsConfig
from imprint_desktop.core.consent import Decision, RedirectConsent, denied_message
from imprint_desktop.core.errors import ToolError, UnknownToolError
from imprint_desktop.core.tools import notes, workspace_tools
from imprint_desktop.core.tools.arguments import parse_arguments
from imprint_desktop.core.tools.fetch import MAX_BYTES, check_target, fetch_page
from imprint_desktop.core.tools.specs import SPECS
from imprint_desktop.core.tools.tool import (
    OUT_OF_TIME,
    EvidenceItem,
    Output,
    ToolKind,
    ToolResult,
    ToolSpec,
    carried_out,
    render,
    unknown_tool,
)
from imprint_desktop.core.workspace import Workspace
from imprint_desktop.core.workspace.extract import split_lines
from imprint_desktop.core.workspace.passages import split_passages

log = logging.getLogger(__name__)


#: A tool's implementation: its validated arguments, the research time left, the result's size cap
#: and the event set once the call is given up on (blocking work in a thread stops at it).
_Runner = Callable[[dict[str, Any], float | None, int, threading.Event], Awaitable[Output]]
#: Where ``fetch_url``'s runner finds who allows a redirect to another site (beside its arguments).
_REDIRECTS = "\x00redirect_consent"


class Toolbox:
    """The tools for one workspace. See the module docstring for the contract."""

    def __init__(
        self,
        workspace: Workspace,
        settings: ToolsConfig,
        http: httpx.AsyncClient | None,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self._http = http
        self._runners: dict[str, _Runner] = {
            "search_workspace": self._search_workspace,
            "read_document": self._read_document,
            "list_documents": self._list_documents,
            "fetch_url": self._fetch_url,
            "write_note": self._write_note,
        }

    # --- what the engine asks ------------------------------------------------------------------

    @property
    def scope(self) -> str:
        """Where the tools look, in words: the workspace folder's name and path, and the other
        folders' with the names that begin their documents' paths."""
        root = self.workspace.root
        more = [f"{folder.name}/ ({folder.root})" for folder in self.workspace.folders[1:]]
        also = f" with the folders {', '.join(more)}" if more else ""
        return f"the workspace “{root.name or root}” ({root}){also}"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name in SPECS if self._available(name))

    def schemas(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list: every tool available in this toolbox."""
        return [SPECS[name].schema() for name in self.names]

    def kind(self, name: str) -> ToolKind | None:
        """The kind of tool ``name`` (for budgets and progress), or None for a name that is not
        one of the toolbox's tools."""
        spec = SPECS.get(name) if name in self._runners else None
        return spec.kind if spec is not None else None

    def needs_consent(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        *,
        timeout: float | None = None,
    ) -> str | None:
        """The address the person must allow before this call may run, or None when no one is to
        be asked: the call is no fetch, ``tools.fetch_url_confirm`` is off, or :meth:`execute`
        refuses the call before anything is fetched (bad arguments, no time left, an address that
        is never fetched) and says why."""
        if name != "fetch_url" or not self.settings.fetch_url_confirm:
            return None
        if timeout is not None and timeout <= 0:
            return None
        try:
            return check_target(parse_arguments(self._spec(name), arguments)["url"])
        except Exception:  # execute meets the same failure and reports it
            return None

    async def execute(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        *,
        timeout: float | None = None,
        first_citation: int = 1,
        max_chars: int | None = None,
        consent: Decision | None = None,
        redirect_consent: RedirectConsent | None = None,
    ) -> ToolResult:
        """Run one tool call; never raises except :class:`asyncio.CancelledError`.

        ``timeout`` is the research time left in seconds (None: no limit); read tools that exceed
        it return an error result. ``first_citation`` numbers the result's evidence ``[n]``,
        ``[n+1]``… so numbers stay unique across a reply. ``max_chars`` caps this result below
        ``tools.max_result_chars`` (the engine's own first search fits what the window has left).
        ``consent`` is the person's decision on the address :meth:`needs_consent` named (None:
        nobody was asked); ``redirect_consent`` asks them about a redirect to another site (None:
        such a redirect is refused while ``tools.fetch_url_confirm`` is on).
        """
        cap = self.settings.max_result_chars
        cap = cap if max_chars is None else max(1, min(cap, max_chars))
        work = self._run(
            name,
            arguments,
            timeout,
            cap,
            first_citation=first_citation,
            consent=consent,
            redirect_consent=redirect_consent,
        )
        return await carried_out(name, work, timeout=timeout)

    async def _run(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        timeout: float | None,
        cap: int,
        *,
        first_citation: int,
        consent: Decision | None,
        redirect_consent: RedirectConsent | None,
    ) -> ToolResult:
        spec = self._spec(name)
        values = parse_arguments(spec, arguments)
        if timeout is not None and timeout <= 0:
            return ToolResult.not_executed(name, OUT_OF_TIME)
        runner = self._runners[name]
        fetching = name == "fetch_url"
        if fetching:
            values = {
                **values,
                "url": self._allowed_target(values["url"], consent),
                _REDIRECTS: self._redirects(redirect_consent),
            }
        given_up = threading.Event()
        try:
            if spec.kind is ToolKind.READ and timeout is not None and not fetching:
                output = await asyncio.wait_for(runner(values, timeout, cap, given_up), timeout)
            else:
                output = await runner(values, timeout, cap, given_up)
        finally:
            given_up.set()  # what still runs in a worker thread for this call stops
        return render(name, output, max_chars=cap, first_citation=first_citation)

    def _spec(self, name: str) -> ToolSpec:
        spec = SPECS.get(name) if isinstance(name, str) else None
        if spec is None or not self._available(spec.name):
            raise UnknownToolError(unknown_tool(name, self.names))
        return spec

    def _available(self, name: str) -> bool:
        if name == "fetch_url":
            return self.settings.fetch_url_enabled and self._http is not None
        return name in self._runners

    # --- the tools -----------------------------------------------------------------------------

    async def _search_workspace(
        self, values: dict[str, Any], timeout: float | None, max_chars: int, _stop: threading.Event
    ) -> Output:
        return await asyncio.to_thread(
            self._labelled,
            workspace_tools.search_workspace,
            self.workspace,
            values["query"],
            values["limit"],
            max_chars,
        )

    async def _read_document(
        self, values: dict[str, Any], timeout: float | None, max_chars: int, stop: threading.Event
    ) -> Output:
        return await asyncio.to_thread(
            self._labelled,
            functools.partial(workspace_tools.read_document, stop=stop),
            self.workspace,
            values["path"],
            values["start_line"],
            values["end_line"],
            max_chars,
        )

    async def _list_documents(
        self, values: dict[str, Any], timeout: float | None, max_chars: int, _stop: threading.Event
    ) -> Output:
        return await asyncio.to_thread(
            self._labelled, workspace_tools.list_documents, self.workspace, values["folder"]
        )

    def _labelled(self, tool: Callable[..., Output], *arguments: Any) -> Output:
        """Run a workspace read tool (in a worker thread) and label the model's own notes."""
        return notes.label_model_written(self.workspace, tool(*arguments))

    def _allowed_target(self, url: str, consent: Decision | None) -> str:
        """The URL to fetch, once it may be: refused at once when it never may, then by the
        person's decision when ``tools.fetch_url_confirm`` is on (a denial raises)."""
        target = check_target(url)
        if not self.settings.fetch_url_confirm:
            return target
        decision = consent if consent is not None else Decision.DENY_UNATTENDED
        if not decision.allowed:
            raise ToolError(denied_message(target, decision))
        return target

    def _redirects(self, ask: RedirectConsent | None) -> RedirectConsent | None:
        """Who allows a redirect to another site: nobody needs to with confirmation off; with it
        on, the person through ``ask``, and without ``ask`` the redirect is refused."""
        if not self.settings.fetch_url_confirm:
            return None
        if ask is not None:
            return ask

        async def refuse(from_url: str, to_url: str) -> Decision:
            del from_url, to_url
            return Decision.DENY_UNATTENDED

        return refuse

    async def _fetch_url(
        self, values: dict[str, Any], timeout: float | None, max_chars: int, _stop: threading.Event
    ) -> Output:
        assert self._http is not None  # _available() hides the tool otherwise
        # fetch_page's own deadline bounds the whole exchange (and pauses while the person
        # decides on a redirect), so this call is not put under another.
        page = await fetch_page(
            self._http,
            values["url"],
            timeout=timeout,
            max_bytes=MAX_BYTES,
            local_redirects=not self.settings.fetch_url_confirm,
            confirm_redirect=values[_REDIRECTS],
        )
        passages = split_passages(split_lines(page.text))
        items = [
            EvidenceItem(
                page.url,
                f"part {number}" + (f" ({passage.section})" if passage.section else ""),
                passage.text,
            )
            for number, passage in enumerate(passages, start=1)
        ]
        cut = (
            " The page was longer than the download limit; the rest was not read."
            if (page.truncated)
            else ""
        )
        if not items:
            return Output(f"{page.url} ({page.title}) has no readable text.{cut}", status="empty")
        return Output(f"Web page {page.url} — {page.title}.{cut}", items)

    async def _write_note(
        self, values: dict[str, Any], timeout: float | None, max_chars: int, _stop: threading.Event
    ) -> Output:
        # A write is never abandoned: shielded, so even a cancelled caller leaves a whole file.
        path = await asyncio.shield(
            asyncio.to_thread(notes.write_note, self.workspace, values["title"], values["content"])
        )
        return Output(f"Note saved as {path}.")
