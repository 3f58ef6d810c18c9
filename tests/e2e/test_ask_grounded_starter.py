"""Never confidently wrong, on the real starter model through `imprint ask` (issue 40, DESIGN §7).

The documents answer questions beside the ones asked here (an adult fare and a child fare, a
summer timetable, a founder), not these. Whatever SmolLM2-135M writes, the reply is "not found",
the labelled evidence, or an answer flagged: never one shown as supported. A question about
nothing in the documents at all is "not found" before the model's answer is shown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import ask

pytestmark = pytest.mark.e2e

DOCUMENTS = {
    "finance/fares.md": (
        "# Fares 2024\n\n| Ticket | Price |\n|---|---|\n| Adult return | £18.50 |\n"
        "| Child return | £9.25 |\n"
    ),
    "operations/timetable.md": (
        "# Summer timetable 2024\n\nIn summer the first train leaves Tarnmouth at 09:40 and the "
        "last train leaves Crag Quarry at 17:15. The journey takes 42 minutes.\n"
    ),
    "people/society.md": (
        "# The preservation society\n\nThe preservation society was founded in 1962 by Tom "
        "Ashworth, a schoolteacher from Tarnmouth. It now has about 340 members.\n"
    ),
}


@pytest.fixture
def railway(tmp_path: Path) -> Path:
    root = tmp_path / "railway"
    for name, text in DOCUMENTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def starter_ask(imprint: Imprint, workspace: Path, question: str) -> dict[str, Any]:
    result = ask(
        imprint, None, workspace, "--provider", "local", "--set", "chat.max_tokens=128",
        question=question, timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "question",
    [
        "How much does a senior return ticket cost?",
        "What time does the last train leave Crag Quarry in winter?",
        "Who was the first chairman of the preservation society?",
        "How many members did the preservation society have in 1962?",
    ],
)
def test_an_answer_the_documents_do_not_hold_is_never_shown_as_supported(
    imprint: Imprint, railway: Path, question: str
) -> None:
    payload = starter_ask(imprint, railway, question)
    grounding = payload["grounding"] or {}
    # "Not found", the labelled evidence (no answer of the model's shown as one), or flagged.
    assert payload["final_mode"] in ("no_evidence", "fallback") or grounding.get("verdict") in (
        "partly",
        "unsupported",
        "not_found",
    ), payload
    if grounding.get("verdict") in ("partly", "unsupported"):
        assert any(claim["note"] for claim in grounding["claims"]), grounding


@pytest.mark.timeout(400)
def test_a_question_about_nothing_in_the_documents_is_not_found(
    imprint: Imprint, railway: Path
) -> None:
    payload = starter_ask(imprint, railway, "What is the capital of Australia?")
    assert payload["final_mode"] == "no_evidence", payload
    assert payload["grounding"]["verdict"] == "not_found"
    assert payload["answer"].startswith("Nothing was found"), payload["answer"]
