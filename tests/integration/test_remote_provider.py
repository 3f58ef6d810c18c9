"""The remote provider against scripted OpenAI-compatible servers on loopback, and the real one."""

from __future__ import annotations

import asyncio
import importlib.util
import ipaddress
import json
import logging
import ssl
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

from imprint_desktop import __version__
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderAuthError,
    ProviderDeadlineError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRateLimitError,
    ProviderResponseError,
    ProviderUnavailableError,
    SettingValueError,
)
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import Completion, CompletionRequest, Message, ToolCall
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.providers.remote.client import RemoteProvider
from imprint_desktop.core.providers.remote.failures import RetryPolicy
from imprint_desktop.core.resources import resource
from tests.support.llama_server import LlamaServer
from tests.support.openai_server import OpenAIServer, Reply, Usage, chunk, closed_port, sse
from tests.support.settings import make_config

pytestmark = pytest.mark.integration

KEY = "sk-imprint-test-7f3a9c2e5b1d4f60"
FAST = RetryPolicy(attempts=4, first_delay=0.01, max_delay=0.05, connect_timeout=2.0)
SEARCH = {
    "type": "function",
    "function": {
        "name": "search_workspace",
        "description": "Full-text search over the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    },
}


def ask(
    question: str = "When was the fog signal installed?",
    *,
    seconds: float = 10.0,
    tool_choice: str = "auto",
) -> CompletionRequest:
    return CompletionRequest(
        messages=(Message("system", "You research documents."), Message("user", question)),
        max_tokens=256,
        deadline=time.monotonic() + seconds,
        tools=(SEARCH,),
        tool_choice=tool_choice,  # type: ignore[arg-type]
    )


def run(
    base_url: str,
    request: CompletionRequest | None = None,
    *,
    api_key: str | None = None,
    model: str = "",
    retry: RetryPolicy = FAST,
    cancel: CancelToken | None = None,
    settings: Mapping[str, object] | None = None,
) -> tuple[Completion, list[str]]:
    """One complete() on a fresh loop and client; returns the completion and the text deltas."""
    texts: list[str] = []

    async def main() -> Completion:
        async with make_async_client(make_config(settings).network) as client:
            provider = RemoteProvider(client, base_url, model, api_key, 8192, retry=retry)
            return await provider.complete(request or ask(), cancel or CancelToken(), texts.append)

    return asyncio.run(main()), texts


async def count(base_url: str, request: CompletionRequest) -> int:
    async with make_async_client(make_config().network) as client:
        return await RemoteProvider(client, base_url, "", None, 8192).count_prompt(request)


def check(base_url: str, *, api_key: str | None = None, model: str = "") -> str:
    async def main() -> str:
        async with make_async_client(make_config().network) as client:
            provider = RemoteProvider(client, base_url, model, api_key, 8192, retry=FAST)
            return await provider.check_connection()

    return asyncio.run(main())


# --- streaming ----------------------------------------------------------------------------------


def test_text_streams_to_the_sink_and_the_request_is_complete(openai_server: OpenAIServer) -> None:
    answer = "The fog signal was installed in 1871 [1]."
    openai_server.script(Reply.text(answer))
    completion, texts = run(openai_server.base_url)

    assert completion.text == answer
    assert len(texts) > 3
    assert "".join(texts) == answer
    assert completion.stop == "stop"
    assert completion.tool_calls == ()
    (request,) = openai_server.chat_requests()
    body = request.json
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [SEARCH]
    assert body["tool_choice"] == "auto"
    assert body["max_tokens"] == 256
    assert "model" not in body  # empty model name: the server chooses
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert request.headers["user-agent"] == f"Imprint/{__version__}"
    assert "authorization" not in request.headers


@pytest.mark.parametrize("together", [False, True], ids=["fragments", "one-delta"])
def test_tool_call_deltas_are_assembled(openai_server: OpenAIServer, together: bool) -> None:
    calls = (
        ToolCall("call_a", "search_workspace", '{"query": "fog signal", "limit": 4}'),
        ToolCall("call_b", "read_document", '{"path": "history/founding-1852.md"}'),
    )
    openai_server.script(Reply.tool_calls(*calls, fragments=5, together=together))
    completion, texts = run(openai_server.base_url)

    assert completion.tool_calls == calls
    assert completion.stop == "tool_calls"
    assert texts == []


def test_a_follow_up_request_answers_every_tool_call(openai_server: OpenAIServer) -> None:
    call = ToolCall("call_1", "search_workspace", '{"query": "fog"}')
    openai_server.script(Reply.tool_calls(call), Reply.text("Done."))
    first, _ = run(openai_server.base_url)
    messages = (
        *ask().messages,
        Message("assistant", "", tool_calls=first.tool_calls),
        Message(
            "tool", "[1] fog.md: installed 1871", tool_call_id="call_1", name="search_workspace"
        ),
    )
    request = CompletionRequest(messages, max_tokens=64, deadline=time.monotonic() + 10)
    run(openai_server.base_url, request)

    openai_server.assert_protocol_complete()
    assert openai_server.chat_requests()[1].messages[2]["tool_calls"] == [call.to_openai()]


def test_protocol_check_catches_an_unanswered_call(openai_server: OpenAIServer) -> None:
    openai_server.check_protocol = False
    call = ToolCall("call_1", "search_workspace", "{}")
    openai_server.script(Reply.text("x"))
    broken = (*ask().messages, Message("assistant", "", tool_calls=(call,)))
    run(openai_server.base_url, CompletionRequest(broken, 64, time.monotonic() + 10))
    with pytest.raises(AssertionError, match="call_1"):
        openai_server.assert_protocol_complete()


def test_a_reply_can_be_made_from_the_request(openai_server: OpenAIServer) -> None:
    openai_server.script(lambda request: Reply.text(f"{len(request.messages)} messages"))
    completion, _ = run(openai_server.base_url)
    assert completion.text == "2 messages"


def test_a_failing_scripted_reply_is_reported(openai_server: OpenAIServer) -> None:
    openai_server.script(lambda request: Reply.text(request.json["no such key"]))
    with pytest.raises(ProviderUnavailableError, match="scripted reply failed: KeyError"):
        run(openai_server.base_url, retry=RetryPolicy(attempts=1))
    assert len(openai_server.failures) == 1
    openai_server.failures.clear()


def test_tools_free_request_sends_no_tools(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.text("Final answer."))
    run(openai_server.base_url, ask(tool_choice="none"), model="imprint-test")

    (request,) = openai_server.chat_requests()
    assert "tools" not in request.json
    assert request.json.get("tool_choice", "none") == "none"
    assert request.json["model"] == "imprint-test"


def test_a_whole_json_completion_is_accepted(openai_server: OpenAIServer) -> None:
    message = {"role": "assistant", "content": "Whole answer."}
    usage = {"prompt_tokens": 40, "completion_tokens": 3}
    openai_server.script(
        Reply.json({"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage})
    )
    completion, texts = run(openai_server.base_url)
    assert (completion.text, texts, completion.prompt_tokens) == (
        "Whole answer.",
        ["Whole answer."],
        40,
    )


# --- token counts -------------------------------------------------------------------------------


def test_reported_usage_replaces_the_estimates(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.text("Answer.", usage=Usage(321, 12, cached=300)))
    completion, _ = run(openai_server.base_url)

    assert completion.prompt_tokens == 321
    assert completion.reused_prefix == 300
    assert completion.prompt_evaluated == 21
    assert completion.output_tokens == 12
    assert completion.estimated is False
    assert completion.provider_usage == Usage(321, 12, cached=300).to_json()


def test_usage_without_cached_tokens_reuses_nothing(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.text("Answer.", usage=Usage(50, 2)))
    completion, _ = run(openai_server.base_url)
    assert (completion.reused_prefix, completion.prompt_evaluated, completion.estimated) == (
        0,
        50,
        False,
    )


def test_without_usage_the_counts_are_estimates(openai_server: OpenAIServer) -> None:
    answer = "Estimated — ünïcode and 漢字 count by their scripts."
    openai_server.script(Reply.text(answer))
    request = ask()

    async def main() -> tuple[int, Completion]:
        async with make_async_client(make_config().network) as client:
            provider = RemoteProvider(client, openai_server.base_url, "", None, 8192, retry=FAST)
            return await provider.count_prompt(request), await provider.complete(
                request, CancelToken()
            )

    counted, completion = asyncio.run(main())
    sent = openai_server.chat_requests()[0].json
    pieces = [sent["tools"], *sent["messages"]]  # the order templates write them in
    expected = sum(
        estimate_tokens(json.dumps(piece, ensure_ascii=False, separators=(",", ":")))
        for piece in pieces
    )

    assert counted == completion.prompt_tokens == expected
    assert completion.output_tokens == estimate_tokens(answer)
    assert (completion.reused_prefix, completion.prompt_evaluated) == (0, counted)
    assert (completion.estimated, completion.prefix_source) == (True, "estimate")
    assert completion.provider_usage is None


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "words"),
    [
        (401, ProviderAuthError, "API key is invalid (401). Open Preferences → Remote server"),
        (403, ProviderAuthError, "refused access with this API key (403)"),
        (404, ProviderNotFoundError, "no /chat/completions endpoint or no model named 'gpt-x'"),
    ],
)
def test_refusals_say_what_to_do_and_never_show_the_key(
    openai_server: OpenAIServer,
    caplog: pytest.LogCaptureFixture,
    status: int,
    kind: type[ProviderError],
    words: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    openai_server.script(Reply.error(status, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(kind) as raised:
        run(openai_server.base_url, api_key=KEY, model="gpt-x")

    message = str(raised.value)
    assert words in message
    assert openai_server.base_url in message
    assert KEY not in message
    assert KEY not in caplog.text
    assert KEY[-8:] not in repr(raised.value.__cause__) + repr(raised.value.__context__)
    assert status in [
        record.args[1] for record in caplog.records if record.args and len(record.args) > 1
    ]
    (request,) = openai_server.chat_requests()  # not retried
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_missing_key_is_named_as_missing(openai_server: OpenAIServer) -> None:
    openai_server.api_key = KEY
    with pytest.raises(ProviderAuthError, match="asks for an API key"):
        run(openai_server.base_url)


def test_429_with_retry_after_is_retried_then_succeeds(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.error(429, retry_after="0.3"), Reply.text("After the wait."))
    started = time.monotonic()
    completion, _ = run(openai_server.base_url)

    assert completion.text == "After the wait."
    assert len(openai_server.chat_requests()) == 2
    assert time.monotonic() - started >= 0.3  # the backoff alone is at most 0.01 s


def test_5xx_is_retried_then_succeeds(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.error(503), Reply.error(500), Reply.error(502), Reply.text("Up."))
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Up."
    assert len(openai_server.chat_requests()) == 4


def test_5xx_every_time_gives_up_after_the_attempts(openai_server: OpenAIServer) -> None:
    openai_server.script(*[Reply.error(500, "model not loaded")] * 6)
    with pytest.raises(ProviderUnavailableError, match=r"failed \(HTTP 500\).*model not loaded"):
        run(openai_server.base_url)
    assert len(openai_server.chat_requests()) == FAST.attempts


@pytest.mark.parametrize(
    "reply",
    [
        Reply.error(503, retry_after="30"),
        Reply.error(429, retry_after=format_datetime(datetime.now(UTC) + timedelta(hours=1))),
    ],
    ids=["seconds", "http-date"],
)
def test_a_retry_after_past_the_deadline_is_the_deadline_at_once(
    openai_server: OpenAIServer, reply: Reply
) -> None:
    """DESIGN §1: the time ran out while the server asked to wait — not a failure of the server
    (research ends with time_budget), and said at once instead of idling until the deadline."""
    openai_server.script(reply, Reply.text("never asked for"))
    started = time.monotonic()
    with pytest.raises(ProviderDeadlineError, match="asked to be asked again in"):
        run(openai_server.base_url, ask(seconds=3.0))
    assert time.monotonic() - started < 1.0
    assert len(openai_server.chat_requests()) == 1


def test_a_server_failing_until_its_tries_run_out_is_still_an_error(
    openai_server: OpenAIServer,
) -> None:
    """The last try's Retry-After does not turn a server that kept failing into a deadline."""
    openai_server.script(*[Reply.error(429, retry_after="0")] * (FAST.attempts - 1))
    openai_server.script(Reply.error(429, retry_after="30"))
    with pytest.raises(ProviderRateLimitError):
        run(openai_server.base_url, ask(seconds=3.0))
    assert len(openai_server.chat_requests()) == FAST.attempts


def test_retries_stop_at_the_deadline(openai_server: OpenAIServer) -> None:
    slow = RetryPolicy(attempts=50, first_delay=0.2, max_delay=0.2, connect_timeout=2.0)
    openai_server.script(*[Reply.error(503)] * 50)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError):
        run(openai_server.base_url, ask(seconds=1.0), retry=slow)
    # Well short of 50 retries × 0.2 s; the margin is for a loaded machine, not for sleeping on.
    assert time.monotonic() - started < 2.0
    assert 2 <= len(openai_server.chat_requests()) < 10


def test_connection_refused_is_retried_then_unavailable(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="imprint_desktop.core.providers.remote.client")
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(
        ProviderUnavailableError, match="Could not connect to the server at"
    ) as raised:
        run(base_url)
    assert "Check that it is running" in str(raised.value)
    retries = [record for record in caplog.records if record.getMessage().startswith("retrying")]
    assert len(retries) == FAST.attempts - 1


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply.garbage(), "not an event stream"),
        (Reply.garbage(b"Internal things happened", content_type="application/json"), "not JSON"),
        (Reply.events("{not json"), "not JSON"),
        (Reply.events({"id": "chatcmpl-1", "object": "chat.completion.chunk"}), "no choices"),
        (
            Reply.stream_error("the model crashed", before="Half "),
            "reported an error while answering: the model crashed",
        ),
    ],
    ids=["html", "json-garbage", "bad-chunk", "no-choices", "error-object"],
)
def test_malformed_answers_are_response_errors(
    openai_server: OpenAIServer, reply: Reply, words: str
) -> None:
    openai_server.script(reply, Reply.text("never asked for"))
    with pytest.raises(ProviderResponseError, match=r"The server at http://127\.0\.0\.1") as raised:
        run(openai_server.base_url)
    assert words in str(raised.value)
    assert len(openai_server.chat_requests()) == 1


def test_a_drop_after_text_is_an_error_and_not_retried(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.drop("Half an ans"), Reply.text("never asked for"))
    with pytest.raises(ProviderUnavailableError, match="broke off before the answer was complete"):
        run(openai_server.base_url)
    assert len(openai_server.chat_requests()) == 1


def test_a_drop_before_any_text_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.drop(""), Reply.text("Second try."))
    completion, texts = run(openai_server.base_url)
    assert (completion.text, texts) == ("Second try.", ["Second ", "try."])
    assert len(openai_server.chat_requests()) == 2


def test_a_stream_that_ends_without_finishing_is_an_error(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.events(chunk({"content": "Cut"}), done=False))
    with pytest.raises(ProviderUnavailableError, match="stream ended before the answer did"):
        run(openai_server.base_url)


def test_crlf_comments_and_multi_line_events(openai_server: OpenAIServer) -> None:
    first = json.dumps(chunk({"content": "Hello"}), indent=1)  # one data line per JSON line
    stream = [
        b": keep-alive\r\n\r\n",
        sse(first).replace(b"\n", b"\r\n"),
        b"data: " + json.dumps(chunk({"content": " world"})).encode() + b"\r",
        b"\n\r\n: ping\r\n\r\n",
        sse(chunk(finish_reason="stop")) + b"data: [DONE]\n\n",
    ]
    openai_server.script(Reply.raw(*stream))
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Hello world"


# --- deadline and cancel ------------------------------------------------------------------------


def test_a_stalled_stream_is_cut_at_the_deadline(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.stall("Partial answer"))
    started = time.monotonic()
    completion, _ = run(openai_server.base_url, ask(seconds=0.6))
    elapsed = time.monotonic() - started

    assert completion.stop == "deadline"
    assert completion.text == "Partial answer"
    assert completion.estimated is True
    assert completion.output_tokens == estimate_tokens("Partial answer")
    assert completion.prompt_evaluated == completion.prompt_tokens > 0
    assert 0.55 <= elapsed < 1.5


def test_a_server_trickling_forever_is_cut_at_the_deadline(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.trickle(".", interval=0.02))
    started = time.monotonic()
    completion, texts = run(openai_server.base_url, ask(seconds=0.6))

    assert completion.stop == "deadline"
    assert len(texts) >= 5
    assert set(completion.text) == {"."}
    assert time.monotonic() - started < 1.5


def test_cancel_interrupts_an_open_stream_promptly(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.stall("Partial answer"))
    cancel = CancelToken()
    pressed: list[float] = []

    def press_stop() -> None:  # the GUI thread's Stop button
        if openai_server.wait_for_stall(timeout=10):
            pressed.append(time.monotonic())
            cancel.cancel()

    stopper = threading.Thread(target=press_stop)
    stopper.start()
    try:
        completion, _ = run(openai_server.base_url, ask(seconds=30), cancel=cancel)
        returned = time.monotonic()
    finally:
        stopper.join()
    latency = returned - pressed[0]
    print(f"cancel latency: {latency * 1000:.1f} ms")

    assert completion.stop == "cancelled"
    assert completion.text == "Partial answer"
    assert latency < 0.25


def test_already_cancelled_or_expired_sends_nothing(openai_server: OpenAIServer) -> None:
    cancel = CancelToken()
    cancel.cancel()
    cancelled, _ = run(openai_server.base_url, cancel=cancel)
    expired, _ = run(openai_server.base_url, ask(seconds=-1))

    assert (cancelled.stop, expired.stop) == ("cancelled", "deadline")
    assert cancelled.prompt_evaluated == expired.prompt_evaluated == 0
    assert openai_server.chat_requests() == []


# --- connection test ----------------------------------------------------------------------------


def test_check_connection_lists_models(openai_server: OpenAIServer) -> None:
    openai_server.models = ["imprint-test", "other", "third", "fourth"]
    summary = check(openai_server.base_url, model="other")
    assert summary.startswith(f"Connected to {openai_server.base_url}: 4 models available")
    assert "imprint-test" in summary


def test_check_connection_names_a_missing_model(openai_server: OpenAIServer) -> None:
    with pytest.raises(ProviderNotFoundError, match="does not offer a model named 'gpt-x'"):
        check(openai_server.base_url, model="gpt-x")


def test_check_connection_reports_refusal_and_absence(openai_server: OpenAIServer) -> None:
    openai_server.api_key = KEY
    with pytest.raises(ProviderAuthError, match="API key is invalid"):
        check(openai_server.base_url, api_key="wrong")
    assert check(openai_server.base_url, api_key=KEY).startswith("Connected")
    with pytest.raises(ProviderUnavailableError, match="Could not connect"):
        check(f"http://127.0.0.1:{closed_port()}/v1")


def test_name_and_repr_hide_credentials() -> None:
    async def main() -> RemoteProvider:
        async with make_async_client(make_config().network) as client:
            return RemoteProvider(client, "http://me:hunter2@127.0.0.1:9/v1?k=q", "m", KEY, 4096)

    provider = asyncio.run(main())
    shown = provider.name + repr(provider)
    assert "hunter2" not in shown
    assert KEY not in shown
    assert "http://127.0.0.1:9/v1" in shown


# --- network settings ---------------------------------------------------------------------------

ELSEWHERE = "http://imprint-proxy-check.invalid/v1/models"


def fetch(url: str, settings: Mapping[str, object]) -> int:
    async def main() -> int:
        async with make_async_client(make_config(settings).network) as client:
            return (await client.get(url)).status_code

    return asyncio.run(main())


def test_the_proxy_setting_routes_requests_through_the_proxy(openai_server: OpenAIServer) -> None:
    assert fetch(ELSEWHERE, {"network.proxy": openai_server.url}) == 200
    (request,) = openai_server.requests
    assert request.target == ELSEWHERE  # absolute form: the request came to us as a proxy


def test_loopback_bypasses_the_proxy(openai_server: OpenAIServer) -> None:
    nowhere = f"http://127.0.0.1:{closed_port()}"
    assert fetch(f"{openai_server.base_url}/models", {"network.proxy": nowhere}) == 200
    assert openai_server.requests[0].target == "/v1/models"


def test_without_the_setting_the_system_proxy_applies(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", openai_server.url)
    assert fetch(ELSEWHERE, {"network.proxy": ""}) == 200
    assert openai_server.requests[0].target == ELSEWHERE
    # The setting wins over the environment.
    with OpenAIServer() as chosen:
        assert fetch(ELSEWHERE, {"network.proxy": chosen.url}) == 200
        assert [request.target for request in chosen.requests] == [ELSEWHERE]
    assert len(openai_server.requests) == 1


def test_socks_without_its_package_names_the_setting() -> None:
    if importlib.util.find_spec("socksio") is not None:
        pytest.skip("socksio is installed: SOCKS proxies work")
    with pytest.raises(SettingValueError, match="socksio") as raised:
        make_async_client(
            make_config({"network.proxy": "socks5://me:hunter2@127.0.0.1:1080"}).network
        )
    assert raised.value.key == "network.proxy"
    assert "hunter2" not in str(raised.value)


def test_an_unusable_proxy_is_named_by_its_public_address() -> None:
    # The settings refuse such an address; an environment or a file edited by hand may not.
    proxy = "ftp://me:hunter2@Proxy.example:2121/"
    with pytest.raises(SettingValueError) as raised:
        make_async_client(make_config({"network.proxy": proxy}).network)
    assert raised.value.key == "network.proxy"
    assert str(raised.value).startswith(
        "network.proxy: 'ftp://proxy.example:2121' is not a usable proxy address ("
    )
    assert "hunter2" not in str(raised.value)


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A private certificate authority and a certificate it issued for 127.0.0.1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    now = datetime.now(UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    authority = (
        x509.CertificateBuilder()
        .subject_name(name("Imprint test authority"))
        .issuer_name(name("Imprint test authority"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = folder / "authority.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(authority.public_bytes(pem))
    paths[1].write_bytes(certificate.public_bytes(pem))
    paths[2].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def test_the_ca_bundle_setting_adds_a_trusted_authority(tmp_path: Path) -> None:
    authority, certificate, key = make_certificates(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certificate, key)
    with OpenAIServer(tls=tls) as server:
        models = f"{server.base_url}/models"
        assert models.startswith("https://")
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            fetch(models, {"network.ca_bundle": ""})
        assert fetch(models, {"network.ca_bundle": str(authority)}) == 200


@pytest.mark.parametrize("content", [None, "not a certificate\n"], ids=["missing", "not-pem"])
def test_an_unusable_ca_bundle_names_the_setting(tmp_path: Path, content: str | None) -> None:
    bundle = tmp_path / "company.pem"
    if content is not None:
        bundle.write_text(content)
    with pytest.raises(SettingValueError, match="Preferences → Network") as raised:
        make_async_client(make_config({"network.ca_bundle": str(bundle)}).network)
    assert raised.value.key == "network.ca_bundle"


# --- the real server ----------------------------------------------------------------------------


@pytest.mark.timeout(400)  # a CPU model on a shared two-core machine reads slowly
def test_real_llama_cpp_server_streams_and_counts(real_llama_server: LlamaServer) -> None:
    document = resource("sample-workspace", "README.md").read_text(encoding="utf-8")[:3000]
    question = f"{document}\n\nIn one short sentence: what is this workspace about?"
    request = CompletionRequest(
        messages=(Message("user", question),),
        max_tokens=24,
        deadline=time.monotonic() + 300,
        temperature=0.0,
    )
    completion, texts = run(real_llama_server.base_url, request, model=real_llama_server.model)

    assert completion.text.strip()
    assert "".join(texts) == completion.text
    assert completion.stop in ("stop", "length")
    assert 0 < completion.output_tokens <= 3 * 24
    if completion.provider_usage is None:  # llama_cpp.server 0.3 does not stream usage
        assert completion.estimated is True
        assert completion.reused_prefix == 0
        assert completion.prompt_evaluated == completion.prompt_tokens
    else:
        assert completion.estimated is False
        assert completion.prompt_tokens == completion.provider_usage["prompt_tokens"]

    # The byte estimate against the server's own count of the same prompt (template included).
    exact = httpx.post(
        f"{real_llama_server.base_url}/chat/completions",
        json={
            "model": real_llama_server.model,
            "messages": [{"role": "user", "content": question}],
            "max_tokens": 1,
        },
        timeout=300,
        trust_env=False,
    ).json()["usage"]["prompt_tokens"]
    estimate = asyncio.run(count(real_llama_server.base_url, request))
    assert 0.7 <= estimate / exact <= 1.4, (estimate, exact)


def test_real_llama_cpp_server_does_not_say_its_window(real_llama_server: LlamaServer) -> None:
    """llama-cpp-python's server has no /props and no window in /v1/models: the window is the
    assumed one, and the status says so (llama.cpp's own server is scripted in
    test_remote_provider_limits.py)."""

    async def main() -> RemoteProvider:
        async with make_async_client(make_config().network) as client:
            provider = RemoteProvider(client, real_llama_server.base_url, "", None, 0)
            await provider.discover_context_window()
            return provider

    provider = asyncio.run(main())
    assert (provider.context_window, provider.context_window_source) == (8192, "assumed")
    assert "does not say how many tokens" in provider.context_window_note


@pytest.mark.timeout(300)
def test_a_prompt_past_the_real_server_s_context_is_a_full_context(
    real_llama_server: LlamaServer,
) -> None:
    """Streamed, the server answers 200 and an empty stream; asked again without streaming, it
    names its context (2,048 tokens, see llama_server.py): research would end with
    context_full, and the window is known from then on."""
    long = "The keeper wrote the weather in the log at every change of the watch. " * 400
    request = CompletionRequest(
        messages=(Message("user", long),), max_tokens=16, deadline=time.monotonic() + 240
    )

    async def main() -> tuple[RemoteProvider, ContextOverflowError]:
        async with make_async_client(make_config().network) as client:
            provider = RemoteProvider(client, real_llama_server.base_url, "", None, 0, retry=FAST)
            with pytest.raises(ContextOverflowError) as raised:
                await provider.complete(request, CancelToken())
            return provider, raised.value

    provider, error = asyncio.run(main())
    assert "maximum context length is 2048 tokens" in str(error)
    assert (provider.context_window, provider.context_window_source) == (2048, "server")
