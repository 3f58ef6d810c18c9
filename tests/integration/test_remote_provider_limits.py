"""What a server says about its limits, against scripted OpenAI-compatible servers on loopback.

* A refusal that names the context limit is a :class:`ContextOverflowError` (research ends with
  ``context_full``), whatever the server's wording, and the window size it names is learned.
* An empty event stream is asked again without streaming: that is how llama-cpp-python's server
  says a streamed prompt is too long (the real server is in test_remote_provider.py).
* The reused prefix without ``cached_tokens``: the prompt shared with the previous request.
* The context window, asked once per connection where the server says it, else assumed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from imprint_desktop.core import reply_services
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import Completion, CompletionRequest, Message, ToolCall
from imprint_desktop.core.providers.remote.client import RemoteProvider
from imprint_desktop.core.providers.remote.failures import RetryPolicy
from imprint_desktop.core.providers.remote.server import DEFAULT_CONTEXT_WINDOW
from tests.support.openai_server import MODELS_PATH, OpenAIServer, Reply, Usage, closed_port
from tests.support.settings import make_config

pytestmark = pytest.mark.integration

FAST = RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.05, connect_timeout=2.0)
SEARCH = {
    "type": "function",
    "function": {
        "name": "search_workspace",
        "description": "Full-text search over the workspace.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}
T = TypeVar("T")


def request(*messages: Message, tools: bool = True) -> CompletionRequest:
    return CompletionRequest(
        messages=messages or (Message("system", "You research."), Message("user", "Fog days?")),
        max_tokens=128,
        deadline=time.monotonic() + 10,
        tools=(SEARCH,) if tools else (),
    )


def with_provider(
    server: OpenAIServer,
    use: Callable[[RemoteProvider], Coroutine[Any, Any, T]],
    *,
    window: int = 0,
    api_key: str | None = None,
    model: str = "",
    base_url: str | None = None,
) -> tuple[T, RemoteProvider]:
    """Run ``use(provider)`` on a fresh loop and client; returns its result and the provider."""
    made: list[RemoteProvider] = []

    async def main() -> T:
        async with make_async_client(make_config().network) as client:
            url = base_url or server.base_url
            provider = RemoteProvider(client, url, model, api_key, window, retry=FAST)
            made.append(provider)
            return await use(provider)

    result = asyncio.run(main())
    return result, made[0]


def complete(server: OpenAIServer, *requests: CompletionRequest) -> list[Completion]:
    async def use(provider: RemoteProvider) -> list[Completion]:
        return [await provider.complete(each, CancelToken()) for each in requests]

    return with_provider(server, use)[0]


# --- a prompt the server refuses as too long ---------------------------------------------------


def openai_error(message: str, **fields: Any) -> bytes:
    return json.dumps({"error": {"message": message, **fields}}).encode()


REFUSALS: dict[str, tuple[int, bytes, int | None]] = {
    "openai": (
        400,
        openai_error(
            "This model's maximum context length is 4097 tokens. However, your messages "
            "resulted in 5000 tokens. Please reduce the length of the messages.",
            type="invalid_request_error",
            param="messages",
            code="context_length_exceeded",
        ),
        4097,
    ),
    "vllm": (
        400,
        openai_error(
            "This model's maximum context length is 4096 tokens. However, you requested 5000 "
            "tokens (4000 in the messages, 1000 in the completion). Please reduce the length "
            "of the messages or completion.",
            type="BadRequestError",
            code=400,
        ),
        4096,
    ),
    "vllm-max-tokens": (
        400,
        openai_error(
            "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum "
            "context length is 4096 tokens and your request has 3500 input tokens "
            "(1000 > 4096 - 3500).",
            type="BadRequestError",
        ),
        4096,
    ),
    "vllm-decoder-prompt": (
        400,
        openai_error(
            "The decoder prompt (length 5000) is longer than the maximum model length of 3072. "
            "Make sure that `max_model_len` is no smaller than the number of text tokens."
        ),
        3072,
    ),
    "llama.cpp": (
        400,
        json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "request (4476 tokens) exceeds the available context size (4096 "
                    "tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 4476,
                    "n_ctx": 4096,
                }
            }
        ).encode(),
        4096,
    ),
    "llama.cpp-older": (
        400,
        openai_error(
            "the request exceeds the available context size, try increasing it",
            type="exceed_context_size_error",
            code=400,
        ),
        None,
    ),
    "llama-cpp-python": (
        400,
        openai_error(
            "This model's maximum context length is 2048 tokens. However, you requested 2100 "
            "tokens (2050 in the messages, 50 in the completion). Please reduce the length of "
            "the messages or completion.",
            type="invalid_request_error",
            param="messages",
            code="context_length_exceeded",
        ),
        2048,
    ),
    "tgi": (
        422,
        json.dumps(
            {
                "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be "
                "<= 4096. Given: 4000 `inputs` tokens and 1000 `max_new_tokens`",
                "error_type": "validation",
            }
        ).encode(),
        4096,
    ),
    "lm-studio": (
        400,
        json.dumps(
            {
                "error": "Trying to keep the first 5000 tokens when context the overflows. "
                "However, the model is loaded with context length of only 4096 tokens, which "
                "is not enough. Try to load the model with a larger context length, or provide "
                "a shorter input"
            }
        ).encode(),
        4096,
    ),
    "too-long": (
        413,
        openai_error("prompt is too long: 9000 tokens > 6000 maximum"),
        6000,
    ),
}


@pytest.mark.parametrize("server_kind", list(REFUSALS))
def test_a_refusal_naming_the_context_limit_is_a_full_context(
    openai_server: OpenAIServer, server_kind: str
) -> None:
    status, body, window = REFUSALS[server_kind]
    openai_server.script(Reply.error(status, body=body), Reply.text("never asked for"))

    async def use(provider: RemoteProvider) -> ContextOverflowError:
        with pytest.raises(ContextOverflowError) as raised:
            await provider.complete(request(), CancelToken())
        return raised.value

    error, provider = with_provider(openai_server, use)
    assert len(openai_server.chat_requests()) == 1, "a refusal is not retried"
    expected = window if window is not None else DEFAULT_CONTEXT_WINDOW
    assert provider.context_window == expected
    assert provider.context_window_source == ("server" if window else "assumed")
    message = str(error)
    assert message.startswith("The prompt does not fit the context window of the model at ")
    assert f"({expected:,} tokens)" in message
    said = json.loads(body)["error"]
    said = said["message"] if isinstance(said, dict) else said
    assert f"It said: {said[:200]}" in message, "the server's own words are kept"


def test_the_window_a_refusal_names_is_used_from_then_on(openai_server: OpenAIServer) -> None:
    status, body, _ = REFUSALS["vllm"]
    openai_server.script(Reply.error(status, body=body))

    async def use(provider: RemoteProvider) -> tuple[int, int]:
        before = provider.context_window
        with pytest.raises(ContextOverflowError):
            await provider.complete(request(), CancelToken())
        return before, provider.context_window

    (before, after), provider = with_provider(openai_server, use, window=32_768)
    # The person's number was 32,768; the server has shown it holds 4,096: planning with more
    # would only be refused again.
    assert (before, after) == (32_768, 4096)
    assert "4,096 tokens of context" in provider.context_window_note


def test_a_larger_window_in_a_refusal_does_not_raise_the_window(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(
        Reply.error(400, body=openai_error("This model's maximum context length is 65536 tokens."))
    )

    async def use(provider: RemoteProvider) -> None:
        with pytest.raises(ContextOverflowError):
            await provider.complete(request(), CancelToken())

    _, provider = with_provider(openai_server, use, window=16_000)
    assert (provider.context_window, provider.context_window_source) == (16_000, "settings")


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (400, "Invalid value for 'temperature': must be between 0 and 2.", ProviderResponseError),
        (404, "The model `x` does not exist", None),
        (500, "maximum context length is 4096 tokens", ProviderUnavailableError),
    ],
    ids=["bad-value", "no-model", "5xx"],
)
def test_other_errors_are_not_a_full_context(
    openai_server: OpenAIServer, status: int, message: str, kind: type[Exception] | None
) -> None:
    openai_server.script(*[Reply.error(status, message)] * FAST.attempts)

    async def use(provider: RemoteProvider) -> None:
        await provider.complete(request(), CancelToken())

    with pytest.raises(Exception) as raised:
        with_provider(openai_server, use)
    assert not isinstance(raised.value, ContextOverflowError)
    if kind is not None:
        assert isinstance(raised.value, kind)


# --- an empty event stream ---------------------------------------------------------------------


def test_an_empty_stream_is_asked_again_without_streaming_and_the_refusal_read(
    openai_server: OpenAIServer,
) -> None:
    status, body, _ = REFUSALS["llama-cpp-python"]
    openai_server.script(Reply.raw(b""), Reply.error(status, body=body))

    async def use(provider: RemoteProvider) -> None:
        await provider.complete(request(), CancelToken())

    with pytest.raises(ContextOverflowError):
        with_provider(openai_server, use)
    streamed, plain = openai_server.chat_requests()
    assert streamed.json["stream"] is True
    assert plain.json["stream"] is False and "stream_options" not in plain.json
    assert plain.json["messages"] == streamed.json["messages"]


def test_an_empty_stream_then_a_plain_answer_is_the_answer(openai_server: OpenAIServer) -> None:
    message = {"role": "assistant", "content": "Two blasts a minute."}
    usage = {"prompt_tokens": 30, "completion_tokens": 6}
    openai_server.script(
        Reply.raw(b""),
        Reply.json({"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}),
        Reply.text("Streamed again.", usage=Usage(40, 3)),
    )
    first, second = complete(openai_server, request(), request())
    assert (first.text, first.prompt_tokens, first.stop) == ("Two blasts a minute.", 30, "stop")
    assert second.text == "Streamed again.", "only that request was asked without streaming"
    assert [r.json["stream"] for r in openai_server.chat_requests()] == [True, False, True]


def test_an_empty_stream_every_time_is_an_error(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.raw(b""), Reply.raw(b""))

    async def use(provider: RemoteProvider) -> None:
        await provider.complete(request(), CancelToken())

    with pytest.raises(ProviderResponseError, match="cannot read"):
        with_provider(openai_server, use)
    assert len(openai_server.chat_requests()) == 2


# --- the prefix a server without cached_tokens reused -----------------------------------------


def conversation() -> tuple[CompletionRequest, CompletionRequest]:
    call = ToolCall("call_1", "search_workspace", '{"query": "fog"}')
    first = request(Message("system", "You research documents."), Message("user", "Fog days?"))
    second = request(
        *first.messages,
        Message("assistant", "", (call,)),
        Message("tool", "[1] keepers.md: 212 fog days in 1968.", tool_call_id="call_1"),
    )
    return first, second


def test_without_usage_the_reused_prefix_is_the_previous_prompt(
    openai_server: OpenAIServer,
) -> None:
    first, second = conversation()
    openai_server.script(
        Reply.tool_calls(ToolCall("call_1", "search_workspace", '{"query": "fog"}')),
        Reply.text("212 [1]."),
    )

    async def use(provider: RemoteProvider) -> tuple[list[Completion], int, int]:
        counted = await provider.count_prompt(first), await provider.count_prompt(second)
        done = [await provider.complete(first, CancelToken())]
        done.append(await provider.complete(second, CancelToken()))
        return done, *counted

    (done, first_count, second_count), _ = with_provider(openai_server, use)
    one, two = done
    assert (one.reused_prefix, one.prefix_source) == (0, "estimate")
    assert (two.reused_prefix, two.prefix_source) == (first_count, "estimate")
    assert two.prompt_tokens == second_count
    assert two.prompt_evaluated == second_count - first_count > 0, "only the new turn is charged"


def test_with_usage_but_no_cached_tokens_the_prefix_is_the_same_share_of_the_servers_count(
    openai_server: OpenAIServer,
) -> None:
    first, second = conversation()
    openai_server.script(
        Reply.text("One.", usage=Usage(100, 2)), Reply.text("Two.", usage=Usage(300, 2))
    )

    async def use(provider: RemoteProvider) -> tuple[list[Completion], int, int]:
        counted = await provider.count_prompt(first), await provider.count_prompt(second)
        done = [await provider.complete(each, CancelToken()) for each in (first, second)]
        return done, *counted

    ((_, two), first_count, second_count), _ = with_provider(openai_server, use)
    assert two.prefix_source == "estimate" and two.estimated is False
    assert two.prompt_tokens == 300
    assert two.reused_prefix == first_count * 300 // second_count
    assert two.prompt_evaluated == 300 - two.reused_prefix


def test_the_servers_cached_tokens_win_even_when_zero(openai_server: OpenAIServer) -> None:
    first, second = conversation()
    openai_server.script(
        Reply.text("One.", usage=Usage(100, 2, cached=0)),
        Reply.text("Two.", usage=Usage(300, 2, cached=0)),
    )
    one, two = complete(openai_server, first, second)
    assert (two.reused_prefix, two.prefix_source, two.prompt_evaluated) == (0, "server", 300)
    assert one.prefix_source == "server"


def test_a_refused_request_is_not_the_previous_prompt(openai_server: OpenAIServer) -> None:
    first, second = conversation()
    third = request(*second.messages, Message("user", "And in 1969?"))
    openai_server.script(Reply.text("One."), Reply.error(400, "bad request"), Reply.text("Three."))

    async def use(provider: RemoteProvider) -> tuple[Completion, int]:
        await provider.complete(first, CancelToken())
        with pytest.raises(ProviderResponseError):
            await provider.complete(second, CancelToken())
        return await provider.complete(third, CancelToken()), await provider.count_prompt(first)

    (done, first_count), _ = with_provider(openai_server, use)
    assert done.reused_prefix == first_count, "the server never read the refused prompt"


def test_a_request_without_the_tools_shares_no_prefix(openai_server: OpenAIServer) -> None:
    """The final request sends no tools: a template writes tools first, so nothing is reused."""
    first, second = conversation()
    final = request(*second.messages, Message("user", "Answer now."), tools=False)
    openai_server.script(Reply.text("One."), Reply.text("Final."))
    _, two = complete(openai_server, first, final)
    assert (two.reused_prefix, two.prompt_evaluated) == (0, two.prompt_tokens)


# --- the context window the server says ----------------------------------------------------------


def discover(server: OpenAIServer, *, timeout: float = 5.0, **options: Any) -> RemoteProvider:
    async def use(provider: RemoteProvider) -> None:
        await provider.discover_context_window(timeout=timeout)

    return with_provider(server, use, **options)[1]


def listing(*models: dict[str, Any]) -> Reply:
    return Reply.json({"object": "list", "data": list(models)})


def test_a_vllm_like_model_list_gives_the_window(openai_server: OpenAIServer) -> None:
    openai_server.script(
        listing({"id": "qwen", "object": "model", "owned_by": "vllm", "max_model_len": 4096}),
        path=MODELS_PATH,
    )
    provider = discover(openai_server)
    assert (provider.context_window, provider.context_window_source) == (4096, "server")
    assert provider.context_window_note == (
        f"The server at {openai_server.base_url} holds 4,096 tokens of context."
    )
    assert [r.path for r in openai_server.requests] == [MODELS_PATH], "asked once, and no more"


def test_llama_cpp_server_props_give_the_window(openai_server: OpenAIServer) -> None:
    openai_server.script(
        Reply.json({"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}),
        path="/props",
    )
    provider = discover(openai_server)
    assert (provider.context_window, provider.context_window_source) == (2048, "server")
    assert [r.path for r in openai_server.requests] == [MODELS_PATH, "/props"]


def test_older_llama_cpp_props_and_lm_studio_model_lists_give_the_window(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(Reply.json({"n_ctx": 3000}), path="/props")
    assert discover(openai_server).context_window == 3000

    with OpenAIServer() as lm_studio:
        lm_studio.script(
            listing(
                {"id": "a", "max_context_length": 131072, "loaded_context_length": 12000},
                {"id": "b", "max_context_length": 32768, "loaded_context_length": 8000},
            ),
            path="/api/v0/models",
        )
        assert discover(lm_studio, model="b").context_window == 8000


def test_the_named_model_s_entry_is_read(openai_server: OpenAIServer) -> None:
    openai_server.script(
        listing({"id": "small", "context_length": 2048}, {"id": "big", "context_length": 131072}),
        path=MODELS_PATH,
    )
    assert discover(openai_server, model="big").context_window == 131072


def test_a_silent_server_leaves_the_assumed_window_and_says_so(
    openai_server: OpenAIServer,
) -> None:
    provider = discover(openai_server)
    assert (provider.context_window, provider.context_window_source) == (8192, "assumed")
    assert "does not say how many tokens its model holds" in provider.context_window_note
    assert "8,192" in provider.context_window_note
    assert "Context window in Preferences" in provider.context_window_note
    paths = [r.path for r in openai_server.requests]
    assert paths == [MODELS_PATH, "/props", "/api/v0/models"]


@pytest.mark.parametrize("value", ["lots", -1, 0, 10**30, True, 4096.5, None, [4096], {"n": 1}])
def test_nonsense_windows_are_ignored(openai_server: OpenAIServer, value: Any) -> None:
    openai_server.script(listing({"id": "m", "max_model_len": value}), path=MODELS_PATH)
    openai_server.script(
        Reply.json({"default_generation_settings": {"n_ctx": value}}), path="/props"
    )
    openai_server.script(Reply.garbage(), path="/api/v0/models")
    assert discover(openai_server).context_window_source == "assumed"


def test_the_person_s_number_wins_and_nothing_is_asked(openai_server: OpenAIServer) -> None:
    openai_server.script(listing({"id": "m", "max_model_len": 4096}), path=MODELS_PATH)
    provider = discover(openai_server, window=20_000)
    assert (provider.context_window, provider.context_window_source) == (20_000, "settings")
    assert provider.context_window_note == ""
    assert openai_server.requests == []


def test_the_server_is_asked_once_per_connection(openai_server: OpenAIServer) -> None:
    openai_server.script(listing({"id": "m", "max_model_len": 4096}), path=MODELS_PATH)

    async def use(provider: RemoteProvider) -> int:
        await provider.discover_context_window()
        await provider.discover_context_window()
        return provider.context_window

    window, _ = with_provider(openai_server, use)
    assert window == 4096 and len(openai_server.requests) == 1


def test_the_api_key_goes_with_the_question(openai_server: OpenAIServer) -> None:
    openai_server.api_key = "sk-window-test"
    openai_server.script(listing({"id": "m", "max_model_len": 4096}), path=MODELS_PATH)
    assert discover(openai_server, api_key="sk-window-test").context_window == 4096


def test_an_unreachable_server_is_not_waited_for() -> None:
    started = time.monotonic()
    with OpenAIServer() as unused:
        provider = discover(unused, base_url=f"http://127.0.0.1:{closed_port()}/v1")
    assert provider.context_window_source == "assumed"
    assert time.monotonic() - started < 3.0


def test_a_server_that_never_answers_is_given_up_on(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.stall(), path=MODELS_PATH)
    started = time.monotonic()
    provider = discover(openai_server, timeout=0.5)
    assert provider.context_window_source == "assumed"
    assert time.monotonic() - started < 3.0
    openai_server.release()


def test_the_provider_the_settings_open_has_asked_the_server(openai_server: OpenAIServer) -> None:
    """reply_services.open_provider: the window is known before research time starts."""
    openai_server.script(listing({"id": "m", "max_model_len": 6000}), path=MODELS_PATH)
    config = make_config({"model.provider": "remote", "remote.base_url": openai_server.base_url})
    assert config.remote.context_window == 0, "asking the server is the default"

    async def main() -> tuple[int, str]:
        async with make_async_client(make_config().network) as client:
            provider = await reply_services.open_provider(config, client)
            return provider.context_window, reply_services.provider_note(provider)

    window, note = asyncio.run(main())
    assert window == 6000 and "6,000 tokens" in note
