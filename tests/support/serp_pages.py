"""A search-results page fetched at a new address each time, whose only change is one short line
(issue 42, item 4), and a control whose every page says something new.

Each page is ``/serp?q=<word>`` for one of :data:`WORDS`: the same three results, rotated, a new
"generated" time, and the line that changes (:data:`CHANGED_LINES`): the word searched for, a
request id (a UUID) or a visitor count. The control pages add one fact of their own
(:data:`FACTS`), so each of them is new evidence.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from html import escape

WORDS = (
    "lantern",
    "beacon",
    "keeper",
    "harbour",
    "fog",
    "diaphone",
    "granite",
    "storm",
    "lamp",
    "quill",
    "tower",
    "coast",
)

RESULTS = (
    (
        "Greyness Point light",
        "The last keeper of Greyness Point was Ada Quill, who left in 1971 after thirty years.",
    ),
    (
        "Fog signals of the coast",
        "The diaphone at Greyness Point sounded two blasts every minute in thick weather.",
    ),
    (
        "Harbour history",
        "The harbour wall was rebuilt in granite after the storm of 1953 breached it.",
    ),
)

#: One fact per page of the control, none a rewording of another.
FACTS = (
    "The lantern room was glazed with twelve curved panes shipped from Birmingham.",
    "A paraffin vapour burner replaced the wick lamps during the winter of 1905.",
    "Relief crews crossed from Saltmarsh by rowing boat when the causeway flooded.",
    "The tower stands 31 metres above mean high water on a basalt outcrop.",
    "Supply ships anchored in the lee of the north reef to land coal and oil.",
    "The keepers kept goats for milk and grew potatoes behind the boundary wall.",
    "Lightning struck the gallery rail in 1927 and melted part of the copper dome.",
    "The station's radio beacon began transmitting a Morse identifier in 1948.",
    "Visitors may climb the 142 steps on summer weekends when the flag is flying.",
    "The original clockwork rotation machine now sits in the county museum.",
    "Seabird counts from the station's logbooks are used by the ornithology society.",
    "A solar array on the old oil store has powered the light since 2002.",
)


def searched(n: int) -> str:
    return f"You searched for: {WORDS[n]}"


def request_id(_n: int) -> str:
    return f"Request id {uuid.uuid4()}"


def visitors(n: int) -> str:
    return f"Visitors today: {1037 + 29 * n}"


#: The short line each kind of page changes, by the page's number.
CHANGED_LINES: dict[str, Callable[[int], str]] = {
    "searched": searched,
    "request-id": request_id,
    "visitors": visitors,
}


def serp_page(n: int, line: str, *, fact: str = "") -> str:
    """Page ``n`` (from 0): ``line``, the generated time, the results rotated by ``n``, and
    ``fact`` when one is given."""
    rotated = RESULTS[n % len(RESULTS) :] + RESULTS[: n % len(RESULTS)]
    results = "".join(
        f"<li><a href='/result/{escape(title)}'>{escape(title)}</a><p>{escape(snippet)}</p></li>"
        for title, snippet in rotated
    )
    generated = f"2026-12-06 16:{10 + n:02d}:{(7 * n) % 60:02d} UTC"
    return (
        "<!doctype html><html><head><title>Search results</title></head><body><main>"
        + (f"<p>{escape(line)}</p>" if line else "")
        + f"<p>Results generated {generated}</p><ol>{results}</ol>"
        + (f"<p>{escape(fact)}</p>" if fact else "")
        + "</main></body></html>"
    )
