"""Research requests as the engine builds them, for measuring the remote token estimate.

One request per sample of :mod:`tests.support.script_samples`: the research instructions, the
tools, the question with the passages found before answering (the sample as a passage), the
model's search and its result (the sample again, as the toolbox renders a result), in the pieces
the remote provider counts (:meth:`RequestShape.prompt_pieces`: the tools and each message as
compact JSON, so quotes and line breaks are escaped as a server receives them).
"""

from __future__ import annotations

import time

from imprint_desktop.core.providers.base import CompletionRequest, Message, ToolCall
from imprint_desktop.core.providers.remote.request import RequestShape
from imprint_desktop.core.research import prompts
from imprint_desktop.core.tools.specs import SPECS
from imprint_desktop.core.tools.tool import DATA_NOTE
from tests.support.script_samples import SAMPLES

QUESTION = "Who kept the light at Greyness Point, and how many fog days did she record?"


def research_request(name: str) -> CompletionRequest:
    """The second request of a reply whose passages are the sample ``name``."""
    text = SAMPLES[name]
    passage = prompts.Passage(1, f"notes/{name}.md", "lines 1-9", text, title=name.title())
    seeded = prompts.with_passages(prompts.question_block(QUESTION), [passage])
    call = ToolCall("call_1", "search_workspace", '{"query": "keeper fog days logbook"}')
    result = (
        f"1 passage(s) from the workspace for 'keeper fog days logbook', best first.\n"
        f"{DATA_NOTE}\n\n[2] notes/{name}.md, lines 10-18 — {name.title()}\n{text}\n"
    )
    return CompletionRequest(
        messages=(
            Message("system", prompts.research_system("")),
            Message("user", seeded),
            Message("assistant", "", (call,)),
            Message("tool", result, tool_call_id="call_1", name="search_workspace"),
        ),
        max_tokens=512,
        deadline=time.monotonic() + 60,
        tools=tuple(spec.schema() for spec in SPECS.values()),
    )


def request_pieces(name: str) -> tuple[str, ...]:
    """The texts the remote provider estimates for :func:`research_request` of ``name``."""
    return RequestShape("imprint-test").prompt_pieces(research_request(name))
