"""core.net: what every HTTP client's answer says about asking again (Retry-After)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from imprint_desktop.core.net import retry_after_seconds


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("30", 30.0),
        (" 0.5 ", 0.5),
        ("0", 0.0),
        ("-5", 0.0),  # a wait in the past is none
        ("nan", 0.0),
        (format_datetime(datetime.now(UTC) - timedelta(hours=1)), 0.0),
        ("Mon, 01 Jan 0001 00:00:00 -0000", 0.0),
    ],
)
def test_a_wait_is_read_in_seconds_or_from_a_date_never_below_zero(
    header: str, seconds: float
) -> None:
    assert retry_after_seconds(header) == seconds


def test_a_date_is_the_time_until_it() -> None:
    header = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    before = time.time()
    wait = retry_after_seconds(header)
    assert wait is not None
    assert 3600 - (time.time() - before) - 1 <= wait <= 3600  # the header has whole seconds


@pytest.mark.parametrize(
    "header",
    [None, "", "   ", "soon", "\u00e9", "30s", "Mon, 01 Jan 99999999999999999 00:00:00 GMT"],
)
def test_no_header_or_garbage_is_no_wait(header: str | None) -> None:
    assert retry_after_seconds(header) is None
