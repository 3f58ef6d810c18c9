"""A local model's own chat template, rendered safely.

The template that turns messages into a prompt ships inside the GGUF file
(``tokenizer.chat_template``): it is Jinja code written by whoever made the file, so it is untrusted
input. It runs in :class:`~.sandbox.BoundedSandbox`, Jinja's immutable sandbox where reaching for
Python internals (``__class__``, ``__globals__``, mutating a list, calling an unsafe callable)
raises immediately instead of quietly rendering nothing, and where every loop, call, operator and
piece of output is metered (see :mod:`.sandbox`): a template cannot hang the model thread or fill
its memory, whether it prints or not, and a render stops within :data:`MAX_RENDER_SECONDS`. Every
failure is a :class:`~imprint_desktop.core.errors.ChatTemplateError`; a sandbox violation or a
template that asks for too much keeps the :class:`jinja2.sandbox.SecurityError` (for the latter a
:class:`~.sandbox.limits.TemplateLimitError`) as its ``__cause__``, and the loader refuses such a
model.

Tools reach the prompt in one of two ways:

* *native* — the template declares a ``tools`` variable, so it gets the OpenAI tool list and the
  history in the OpenAI shape, and formats both the way its model was trained;
* *prompted* — for templates without tool support, or when the tool-call grammar is on: the tools
  are described in the system message in our words, past calls are written as
  ``<tool_call>[...]</tool_call>`` (what the grammar makes the model write, so the KV prefix
  extends across rounds) and results come back as ``<tool_response>`` user turns. Turns of one
  role in a row (a question after tool results) are merged, so templates that insist on user and
  assistant taking turns accept the conversation.

Native templates differ in what tool history they accept, so :meth:`ChatTemplate.check` tries a
small tool conversation once, at load, and remembers what the template needs:

* call ids of exactly nine letters and digits (Mistral's templates refuse others): every id is
  then written as a stable nine-character digest of itself, the same in every round;
* one call per assistant turn (Llama 3.x's templates refuse more, gpt-oss's show only the first):
  a batch of calls is then written as consecutive turns, each followed by its own result;
* neither helps: the template's own tool format is not used, and tools are *prompted* instead.

A template that takes the history but leaves the call's name, its arguments or its result out of
the prompt (the model would never see what it called) gets the tools *prompted* too.

A template that drops the system message once tool turns follow the question (Mistral's write it
only before a final user turn) gets it folded into the first user message, like one that refuses
a system role outright.

Templates with a thinking switch (Qwen3's ``enable_thinking``) are rendered with it off: research
spends its time budget on searching and reading, and a hidden chain of thought on a CPU would eat
it, then leak into the answer.

A GGUF without a template gets a plain ChatML one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.ext import Extension, loopcontrols
from jinja2.parser import Parser

from imprint_desktop.core.errors import ChatTemplateError
from imprint_desktop.core.providers.base import Message
from imprint_desktop.core.providers.call_markup import format_tool_calls, tool_function
from imprint_desktop.core.providers.local.sandbox.environment import BoundedSandbox
from imprint_desktop.core.providers.local.sandbox.limits import MAX_OUTPUT, TemplateLimitError
from imprint_desktop.core.providers.local.tool_history import (
    PROBE_HISTORY,
    PROBE_QUESTION,
    PROBE_SYSTEM,
    PROBE_TOOLS,
    one_call_per_turn,
    short_call_ids,
    unseen_in_prompt,
)

log = logging.getLogger(__name__)

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

#: Limits: far above any real template and prompt, low enough that a hostile template stops
#: quickly (a model whose template breaks them is refused at load, well within five seconds).
MAX_TEMPLATE_CHARS = 1024 * 1024
MAX_RENDER_CHARS = MAX_OUTPUT
MAX_RENDER_SECONDS = 2.0

TOOLS_PREAMBLE = (
    "You can use tools:\n<tools>\n{tools}\n</tools>\n"
    "To use tools, reply with nothing but one <tool_call> block holding a JSON list of calls:\n"
    '<tool_call>[{{"name": "<tool name>", "arguments": {{<arguments>}}}}]</tool_call>\n'
    "Their results come back inside <tool_response> tags. When you know enough, reply with the "
    "answer in plain text instead."
)


class _Generation(Extension):
    """``{% generation %}…{% endgeneration %}``: transformers' mark around the assistant's part
    (for training masks). Rendering, it is its content; templates that use it work unchanged."""

    tags = {"generation"}  # noqa: RUF012 - the type Jinja declares for it

    def parse(self, parser: Parser) -> list[nodes.Node]:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


class _TemplateRaised(jinja2.TemplateError):
    """``raise_exception()`` called by the template itself (for example: no system role)."""


class _Sandbox(BoundedSandbox):
    """The sandbox, made strict: an unsafe attribute raises at once instead of rendering ''."""

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise SecurityError(f"{type(obj).__name__}.{attribute} is not allowed in a chat template")


def _raise_exception(message: str) -> None:
    raise _TemplateRaised(str(message))


#: The longest ``strftime_now`` format: real templates pass a few directives ("%d %b %Y").
_MAX_DATE_FORMAT = 256


def _strftime_now(fmt: str) -> str:
    """Today's date as the template asks (templates write it into the system prompt). The format
    is bounded before it is used: each directive can stand for dozens of characters."""
    text = str(fmt)
    if len(text) > _MAX_DATE_FORMAT:
        raise TemplateLimitError(
            f"a strftime_now format of {len(text):,} characters (limit {_MAX_DATE_FORMAT})"
        )
    return datetime.now().strftime(text)


class ChatTemplate:
    """One model's prompt format: ``render(messages, tools)`` gives the exact prompt text."""

    def __init__(
        self, source: str | None, *, bos_token: str = "", eos_token: str = "", label: str = ""
    ) -> None:
        self.is_fallback = not (source and source.strip())
        self.source = CHATML_TEMPLATE if self.is_fallback else str(source)
        self.label = label or "the model"
        self._specials = {"bos_token": bos_token, "eos_token": eos_token}
        self._env = _Sandbox(
            trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, _Generation]
        )
        self._env.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now)
        if len(self.source) > MAX_TEMPLATE_CHARS:
            limit = TemplateLimitError(f"it is {len(self.source):,} characters long")
            raise ChatTemplateError(self._too_much(limit)) from limit
        try:
            parsed = self._env.parse_bounded(self.source)
        except jinja2.TemplateSyntaxError as error:
            raise ChatTemplateError(
                f"The chat template of {self.label} is not valid Jinja ({error})."
            ) from error
        except (RecursionError, MemoryError) as error:
            raise ChatTemplateError(
                f"The chat template of {self.label} is nested too deeply to be read."
            ) from error
        self.supports_tools = _mentions(parsed, "tools")
        try:
            self._template = self._env.from_string(parsed)
        except (jinja2.TemplateError, SyntaxError, RecursionError, MemoryError) as error:
            # An unknown filter, or Jinja code Python cannot compile (too deeply nested blocks).
            raise ChatTemplateError(
                f"The chat template of {self.label} cannot be used: {type(error).__name__}: {error}"
            ) from error
        self.system_role = True  # cleared by check() when the template refuses system messages
        self.short_call_ids = False  # set by check(): ids must be nine letters and digits
        self.one_call_per_turn = False  # set by check(): one call per assistant message

    def check(self) -> None:
        """Render a tiny conversation once, at load, so a broken template fails before research.

        A template that refuses a system message (some do, with ``raise_exception``) is remembered
        and gets the system text folded into the first user message from then on.
        """
        probe = (Message("system", "Be brief."), Message("user", "Hello?"))
        try:
            self.render(probe)
        except ChatTemplateError as error:
            if not isinstance(error.__cause__, _TemplateRaised):
                raise
            self.system_role = False
            self.render(probe)
        if self.supports_tools:
            self._check_tool_history()

    def _check_tool_history(self) -> None:
        """Learn how this template accepts a batch of calls and their results (module docstring)."""
        failure: ChatTemplateError | None = None
        for short_ids, one_per_turn in ((False, False), (True, False), (False, True), (True, True)):
            self.short_call_ids, self.one_call_per_turn = short_ids, one_per_turn
            try:
                text = self.render(PROBE_HISTORY, PROBE_TOOLS, native_tools=True)
            except ChatTemplateError as error:
                if isinstance(error.__cause__, SecurityError):
                    # Not a quirk to work around: left as it is, every request with tools fails
                    # in the sandbox the same way, safely, and says so.
                    self.short_call_ids = self.one_call_per_turn = False
                    return
                failure = error
                continue
            unseen = unseen_in_prompt(text, self._question_only())
            if unseen is not None:
                # Some write only the first call of a turn: one call per turn may show them all.
                failure = ChatTemplateError(
                    f"The chat template of {self.label} leaves {unseen} out of the prompt"
                )
                continue
            if PROBE_SYSTEM not in text and self.system_role:
                # It writes the system message only before a final user turn (Mistral's do), so
                # the research instructions would vanish once tool turns follow: fold them in.
                self.system_role = False
            return
        self.short_call_ids = self.one_call_per_turn = False
        self.supports_tools = False
        log.warning("%s; its tools are described in the prompt instead", failure)

    def _question_only(self) -> str:
        """The probe's question alone, rendered with the probe's tools (see :meth:`check`)."""
        try:
            return self.render(PROBE_QUESTION, PROBE_TOOLS, native_tools=True)
        except ChatTemplateError:
            return ""

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        native_tools: bool | None = None,
    ) -> str:
        """The prompt for ``messages`` with ``tools`` offered, ending with the assistant's turn.

        ``native_tools`` chooses how tools are written (see the module docstring); by default the
        template's own way when it has one.
        """
        native = self.supports_tools and (native_tools is None or native_tools)
        if native:
            chat = [_openai_message(message) for message in messages]
            if self.short_call_ids:
                chat = short_call_ids(chat)
            if self.one_call_per_turn:
                chat = one_call_per_turn(chat)
            tool_list: list[Any] | None = [dict(tool) for tool in tools] or None
        else:
            chat = _prompted_messages(messages, tools)
            tool_list = None
        if not self.system_role:
            chat = _fold_system(chat)
        if not native:
            chat = _alternating(chat)
        return self._render(chat, tool_list)

    def _render(self, chat: list[dict[str, Any]], tools: list[Any] | None) -> str:
        context = {
            "messages": chat,
            "tools": tools,
            "add_generation_prompt": True,
            "enable_thinking": False,
            **self._specials,
        }
        try:
            with self._env.metering(MAX_RENDER_SECONDS, inputs=(chat, tools)):
                return _collect(self._template.generate(context))
        except TemplateLimitError as error:
            raise ChatTemplateError(self._too_much(error)) from error
        except MemoryError:
            limit = TemplateLimitError("it ran out of memory")
            raise ChatTemplateError(self._too_much(limit)) from limit
        except SecurityError as error:
            raise ChatTemplateError(
                f"The chat template of {self.label} tried to reach Python internals or change "
                f"its inputs ({error}); it was stopped in its sandbox. Use a model file from a "
                "trustworthy source."
            ) from error
        except _TemplateRaised as error:
            raise ChatTemplateError(
                f"The chat template of {self.label} refused the conversation: {error}"
            ) from error
        except (jinja2.TemplateError, RecursionError, TypeError, ValueError, LookupError) as error:
            raise ChatTemplateError(
                f"The chat template of {self.label} failed: {type(error).__name__}: {error}"
            ) from error

    def _too_much(self, error: TemplateLimitError) -> str:
        return (
            f"The chat template of {self.label} asks for far more work than any real chat "
            f"template ({error}); it was stopped in its sandbox. Use a model file from a "
            "trustworthy source."
        )


def _collect(pieces: Iterator[str]) -> str:
    """The rendered text, stopped once it passes the size or time limit (the sandbox meters
    the work between pieces; this also bounds the literal text between them)."""
    started = time.monotonic()
    collected: list[str] = []
    size = 0
    for piece in pieces:
        collected.append(piece)
        size += len(piece)
        if size > MAX_RENDER_CHARS:
            raise TemplateLimitError(f"its output passed {MAX_RENDER_CHARS:,} characters")
        if time.monotonic() - started > MAX_RENDER_SECONDS:
            raise TemplateLimitError(f"it ran for more than {MAX_RENDER_SECONDS:g} s")
    return "".join(collected)


def _mentions(parsed: nodes.Template, name: str) -> bool:
    """True when the template reads ``name`` anywhere (also when it also assigns it)."""
    return any(node.name == name for node in parsed.find_all(nodes.Name) if node.ctx == "load")


def _openai_message(message: Message) -> dict[str, Any]:
    """The message as templates with tool support expect it: call arguments as objects."""
    shaped = message.to_openai()
    if message.tool_calls:
        shaped["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_value(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return shaped


def _arguments_value(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (json.JSONDecodeError, RecursionError):
        return arguments


def tool_line(tool: Mapping[str, Any]) -> str:
    """A tool as one line of the prompted preamble: the call's own JSON shape with each
    argument's type, then what the tool is for.

    A JSON schema a tool takes hundreds of tokens to write, which a small model reads before every
    question (prefill is most of its time to answer); the call's form is checked by the grammar
    built from the whole schema, so the prompt needs only the shape, the types and the purpose.
    """
    function = tool_function(tool)
    parameters = function.get("parameters")
    properties = parameters.get("properties", {}) if isinstance(parameters, Mapping) else {}
    required = parameters.get("required", ()) if isinstance(parameters, Mapping) else ()
    arguments: dict[str, str] = {}
    for name, schema in properties.items() if isinstance(properties, Mapping) else ():
        kind = schema.get("type", "any") if isinstance(schema, Mapping) else "any"
        if isinstance(kind, list):
            kind = " or ".join(str(part) for part in kind)
        arguments[str(name)] = str(kind) + ("" if name in required else ", optional")
    shape = json.dumps({"name": function.get("name", ""), "arguments": arguments})
    description = " ".join(str(function.get("description", "")).split())
    return f"{shape} — {description}"


def _prompted_messages(
    messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The history in plain roles: calls as ``<tool_call>`` text, results as user turns."""
    chat: list[dict[str, Any]] = []
    if tools:
        described = "\n".join(tool_line(tool) for tool in tools)
        preamble = TOOLS_PREAMBLE.format(tools=described)
        if messages and messages[0].role == "system":
            system = messages[0].content.rstrip()
            chat.append({"role": "system", "content": f"{system}\n\n{preamble}"})
            messages = messages[1:]
        else:
            chat.append({"role": "system", "content": preamble})
    for message in messages:
        if message.role == "tool":
            response = f"<tool_response>\n{message.content}\n</tool_response>"
            if chat and chat[-1].get("tool_results"):
                chat[-1]["content"] += "\n" + response
            else:
                chat.append({"role": "user", "content": response, "tool_results": True})
        elif message.role == "assistant" and message.tool_calls:
            calls = format_tool_calls(message.tool_calls)
            content = f"{message.content.rstrip()}\n{calls}" if message.content.strip() else calls
            chat.append({"role": "assistant", "content": content})
        else:
            chat.append({"role": message.role, "content": message.content})
    for entry in chat:
        entry.pop("tool_results", None)
    return chat


def _alternating(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive turns of one role merged into one, blank line between: in the prompted layout
    a question can follow tool results (both user turns), and many templates refuse anything but
    user and assistant turns in strict alternation."""
    merged: list[dict[str, Any]] = []
    for entry in chat:
        if merged and entry["role"] == merged[-1]["role"] and entry["role"] != "system":
            merged[-1] = {**merged[-1], "content": f"{merged[-1]['content']}\n\n{entry['content']}"}
        else:
            merged.append(entry)
    return merged


def _fold_system(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For templates without a system role: the system text opens the first user message."""
    system = [entry["content"] for entry in chat if entry["role"] == "system"]
    rest = [dict(entry) for entry in chat if entry["role"] != "system"]
    if not system:
        return rest
    text = "\n\n".join(system)
    for entry in rest:
        if entry["role"] == "user":
            entry["content"] = f"{text}\n\n{entry['content']}"
            return rest
    return [{"role": "user", "content": text}, *rest]
