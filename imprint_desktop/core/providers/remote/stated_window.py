"""What a server says about its context window: in its metadata, or when a prompt is too long.

Servers word it differently, and all of it is untrusted input read leniently:

* **Metadata** (asked once per connection, :func:`ask_window`): llama.cpp's server answers
  ``GET /props`` with ``default_generation_settings.n_ctx`` (older builds: a top-level ``n_ctx``);
  vLLM lists ``max_model_len`` for each model in ``GET /v1/models``; LM Studio's ``GET
  /api/v0/models`` has ``loaded_context_length``; OpenRouter, Together and others put
  ``context_length`` (or ``max_context_length``, ``context_window``) in their model entries.
* **Refusals** (:func:`context_refusal`): an HTTP 400, 413 or 422 whose error names the context
  limit — OpenAI's ``context_length_exceeded`` code and "This model's maximum context length is N
  tokens" (also vLLM's and llama-cpp-python's wording), llama.cpp's ``exceed_context_size_error``
  with ``n_ctx`` ("the request exceeds the available context size"), vLLM's "longer than the
  maximum model length of N", Hugging Face TGI's "must be <= N", LM Studio's "context length of
  only N tokens", "prompt is too long: M tokens > N maximum".
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from imprint_desktop.core.providers.remote.bodies import ANSWER_LIMIT, read_bounded
from imprint_desktop.core.providers.remote.wire import StreamProtocolError, try_json

log = logging.getLogger(__name__)

SMALLEST_WINDOW = 128
"""Fewer tokens than this is not a context window a server really has: such a number is ignored."""
LARGEST_WINDOW = 100_000_000

# Fields of a model entry that give the window it is served with, most specific first.
_MODEL_FIELDS = (
    "loaded_context_length",  # LM Studio: the context the model is loaded with
    "max_model_len",  # vLLM
    "context_length",  # OpenRouter, Together, Ollama-style metadata
    "context_window",
    "max_context_length",  # LM Studio: the most the model could be loaded with
    "n_ctx",
    "max_seq_len",
)

_REFUSAL_STATUSES = frozenset({400, 413, 422})
_REFUSAL_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"}
)
_REFUSAL_WORDS = re.compile(
    r"context[ _-]?(?:length|size|window)|maximum model length|max_model_len"
    r"|prompt is too long|input is too long|too many (?:input )?tokens"
    r"|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)?|token limit)"
    r"|max_new_tokens`? must be <=",
    re.IGNORECASE,
)
# Where the window's size is in a refusal, most explicit first. Every pattern's group 1 is it.
_WINDOW_IN_WORDS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"maximum context length (?:is|of) (\d[\d,]*)",
        r"available context size \((\d[\d,]*) tokens?\)",
        r"maximum model length (?:is |of )?(\d[\d,]*)",
        r"context window of (\d[\d,]*)",
        r"context length of only (\d[\d,]*)",
        r"with (\d[\d,]*) maximum context length",
        r"must be <= (\d[\d,]*)",
        r"> (\d[\d,]*) maximum",
        r"context (?:length|size|window) (?:is|of) (\d[\d,]*)",
    )
)


@dataclass(frozen=True, slots=True)
class ContextRefusal:
    """A server refused a request as too long; ``window`` is its size when the server said it."""

    window: int | None
    message: str


def context_refusal(status: int, body: Any, detail: str) -> ContextRefusal | None:
    """The refusal in an error answer (``body`` parsed JSON, ``detail`` its human text), or None
    when the answer is about something else."""
    if status not in _REFUSAL_STATUSES:
        return None
    error = body.get("error", body) if isinstance(body, Mapping) else None
    fields = error if isinstance(error, Mapping) else {}
    code = " ".join(str(fields.get(key) or "") for key in ("code", "type")).lower()
    named = any(known in code for known in _REFUSAL_CODES)
    if not named and not _REFUSAL_WORDS.search(detail):
        return None
    window = window_size(fields.get("n_ctx"))
    if window is None:
        for pattern in _WINDOW_IN_WORDS:
            if (match := pattern.search(detail)) is not None:
                window = window_size(match.group(1).replace(",", ""))
                break
    return ContextRefusal(window, detail)


def window_size(value: Any) -> int | None:
    """``value`` as a context window size, when it can be one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and SMALLEST_WINDOW <= value <= LARGEST_WINDOW:
        return value
    return None


def window_in_models(listing: Any, model: str) -> int | None:
    """The window of ``model`` (or of the only model, or the first, when none is named) in an
    OpenAI-style model list, when the server puts one there."""
    entries = listing.get("data") if isinstance(listing, Mapping) else listing
    if not isinstance(entries, list):
        return None
    models = [entry for entry in entries if isinstance(entry, Mapping)]
    chosen = [entry for entry in models if model and entry.get("id") == model] or models[:1]
    for entry in chosen:
        for key in _MODEL_FIELDS:
            if (size := window_size(entry.get(key))) is not None:
                return size
        provider = entry.get("top_provider")  # OpenRouter: the serving provider's own limit
        if isinstance(provider, Mapping) and (size := window_size(provider.get("context_length"))):
            return size
    return None


def window_in_props(props: Any) -> int | None:
    """llama.cpp server's ``/props``: the context of one slot, where requests run."""
    if not isinstance(props, Mapping):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, Mapping) and (size := window_size(settings.get("n_ctx"))):
        return size
    return window_size(props.get("n_ctx"))


@dataclass(frozen=True, slots=True)
class ServerWindow:
    """A window size the server reported, and where (``/props``, its model list)."""

    size: int
    where: str


async def ask_window(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    headers: Mapping[str, str],
    *,
    timeout: float = 5.0,
) -> ServerWindow | None:
    """Ask the server at ``base_url`` (``…/v1``) how many tokens ``model`` holds, where it says;
    None when it does not say, cannot be reached or answers nonsense. Never raises (but a
    cancelled task stays cancelled): the first request will meet any real problem and report it.
    """
    root = base_url.removesuffix("/v1")

    def models(listing: Any) -> int | None:
        return window_in_models(listing, model)

    probes: list[tuple[str, str, Callable[[Any], int | None]]] = [
        (f"{base_url}/models", "its model list", models),
        (f"{root}/props", "/props", window_in_props),
        (f"{root}/api/v0/models", "its model list", models),
    ]
    try:
        async with asyncio.timeout(timeout):
            for url, where, read in probes:
                try:
                    async with client.stream(
                        "GET", url, headers=dict(headers), timeout=timeout
                    ) as response:
                        if response.status_code != 200:
                            continue
                        found = read(try_json(await read_bounded(response, ANSWER_LIMIT)))
                except (httpx.TransportError, httpx.InvalidURL) as error:
                    log.info("%s cannot be asked for its context window: %r", url, error)
                    return None  # unreachable: the other paths are on the same server
                except (httpx.HTTPError, StreamProtocolError) as error:
                    log.info("%s: no context window in the answer (%r)", url, error)
                    continue
                if found is not None:
                    return ServerWindow(found, where)
    except TimeoutError:
        log.info("the server at %s did not say its context window in %.0f s", root, timeout)
    return None
