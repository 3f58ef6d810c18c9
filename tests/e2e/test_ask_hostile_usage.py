"""`imprint ask` against servers whose usage reports are not counts (negative, text, null, more
cached tokens than prompt tokens, impossibly large, NaN): they are not believed, the estimate stands
in for them, and the budget and the trace stay whole numbers that add up (DESIGN §1, §5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type, strict_json
from tests.support.ask_hostile import answered, ask, call_delta, opening, read_trace_strictly
from tests.support.openai_server import DONE, OpenAIServer, Reply, chunk, sse

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


def raw_usage(usage: Any) -> dict[str, Any]:
    return {**chunk(choices=False), "usage": usage}


def usage_round(call_id: str, query: str, usage: Any) -> Reply:
    """A search call whose stream ends with ``usage`` as given (any JSON value)."""
    arguments = json.dumps({"query": query})
    return Reply.events(
        opening(),
        call_delta(0, call_id=call_id, name="search_workspace", arguments=arguments),
        chunk(finish_reason="tool_calls"),
        raw_usage(usage),
    )


def test_usage_values_that_are_not_counts_are_not_believed(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        usage_round("neg", "last keeper", {"prompt_tokens": -500, "completion_tokens": -7}),
        usage_round("str", "fog days", {"prompt_tokens": "900", "completion_tokens": "lots"}),
        usage_round("nul", "diaphone", None),
        usage_round(
            "cache",
            "Greyness",
            {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 10**9},
            },
        ),
        Reply.events(
            chunk({"content": "Ada Quill [1]."}),
            chunk(finish_reason="stop"),
            raw_usage([1, 2, 3]),
        ),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--trace",
        str(trace),
        "--set",
        "chat.research_no_progress_rounds=10",
    )
    answered(result, payload)
    assert payload["rounds"] == 4
    tokens = payload["tokens"]
    assert tokens["budget"] == 65536 and 0 < tokens["charged"] <= 65536
    requests = of_type(read_trace_strictly(trace), "request")
    assert len(requests) == 5
    for request in requests:
        for key in ("charged", "refunded", "charged_prompt", "output_tokens", "reused_prefix"):
            assert isinstance(request[key], int) and request[key] >= 0, (key, request)
        assert request["charged"] <= request["reserved"]
        assert request["charged"] + request["refunded"] == request["reserved"]
        assert request["reused_prefix"] <= request["prompt_tokens"]
    # Reports that are not counts are not believed: the estimate stands in for them.
    assert [r["estimated"] for r in requests] == [True, True, True, False, True]
    # More cached tokens than prompt tokens: the whole prompt was reused, nothing more.
    assert requests[3]["charged"] == 5
    assert sum(r["charged"] for r in requests) == tokens["charged"]


def test_an_impossibly_large_usage_report_is_not_believed(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    # 10**30 prompt tokens for a request of a few kilobytes: no tokenizer makes more tokens than
    # there are bytes, so the report is nonsense, like a negative one.
    openai_server.script(
        usage_round("huge", "last keeper", {"prompt_tokens": 10**30, "completion_tokens": 10**20}),
        Reply.text("Ada Quill [1]."),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    answered(result, payload)
    assert payload["rounds"] == 1
    tokens = payload["tokens"]
    assert 0 < tokens["charged"] <= tokens["budget"], tokens
    first = of_type(read_trace_strictly(trace), "request")[0]
    assert first["charged"] <= len(openai_server.chat_requests()[0].body), first


def test_non_finite_usage_keeps_the_trace_valid_json(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.raw(
            sse(chunk({"content": "Ada Quill."})),
            sse(chunk(finish_reason="stop")),
            b'data: {"choices": [], "usage": {"prompt_tokens": NaN, "completion_tokens": '
            b'Infinity, "total_tokens": -Infinity}}\n\n',
            DONE,
        )
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    answered(result, payload)
    strict_json(result.stdout)
    (request,) = of_type(read_trace_strictly(trace), "request")
    assert request["estimated"] is True
