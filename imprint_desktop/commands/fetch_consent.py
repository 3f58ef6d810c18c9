"""How ``imprint ask`` decides a ``fetch_url`` (DESIGN §2, §4).

With ``--allow-fetch`` pages are fetched without asking. Otherwise, when stdin is a terminal, the
person is asked on stderr — ``[o]nce / [s]ite / [d]eny`` — and a site allowed once stays allowed for
the rest of the run; when stdin is not a terminal (a script, a pipe) nobody can be asked and every
fetch is denied. Link-local and cloud-metadata addresses are refused before any of this.

The address is shown as :func:`~imprint_desktop.core.shown_text.shown_address` writes it: nothing
in it is a control or direction-changing character, and a host mixing scripts is in ASCII form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TextIO

from imprint_desktop.core.consent import (
    AllowedSites,
    Consent,
    Decision,
    always,
    remembering,
    site_of,
)
from imprint_desktop.core.shown_text import shown_address

_CHOICES = {
    "o": Decision.ALLOW_ONCE,
    "once": Decision.ALLOW_ONCE,
    "s": Decision.ALLOW_SITE,
    "site": Decision.ALLOW_SITE,
    "d": Decision.DENY,
    "deny": Decision.DENY,
    "": Decision.DENY,  # Enter alone sends nothing anywhere
}


def is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed or detached
        return False


def terminal_consent(
    *,
    allow_fetch: bool,
    interactive: bool,
    err: TextIO,
    read_line: Callable[[], Awaitable[str]],
) -> Consent:
    """The consent for one run: the flag, the terminal prompt, or a denial (see the docstring).

    ``read_line`` returns one line of stdin with its newline, or "" at the end of input.
    """
    if allow_fetch:
        return always(Decision.ALLOW_FLAG)
    if not interactive:
        return always(Decision.DENY_UNATTENDED)

    async def ask(call_id: str, url: str, redirected_from: str = "") -> Decision:
        del call_id
        lead = (
            f"\nThe page you allowed, {shown_address(redirected_from).text}, redirects to "
            "another site (whatever the address contains is sent):\n"
            if redirected_from
            else "\nThe model wants to fetch a web page (whatever the address contains is sent):\n"
        )
        print(
            f"{lead}  {shown_address(url).text}\n  site: {site_of(url)}\n"
            "Allow it [o]nce, allow this [s]ite for this run, or [d]eny? ",
            end="",
            file=err,
            flush=True,
        )
        while True:
            line = await read_line()
            if not line:  # end of input: nobody is there to say yes
                return Decision.DENY
            choice = _CHOICES.get(line.strip().lower())
            if choice is not None:
                return choice
            print("Please type o, s or d: ", end="", file=err, flush=True)

    return remembering(ask, AllowedSites())
