"""Two ways a server on 127.0.0.1 cannot be reached, for tests of what Imprint does offline.

:func:`refusing_address` is a port nobody listens on: a connection is refused at once, as when a
hub, a mirror or a proxy is down. :func:`silent_address` listens, so the connection is made, and
never answers: as a captive portal, a stalled proxy or a black-holed route look to a client.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager


@contextmanager
def refusing_address() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where connections are refused (the port is held, not listened
    on, so no other test takes it meanwhile)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


@contextmanager
def silent_address() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` that accepts connections (the kernel completes them into the
    backlog) and never reads nor answers a request."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"


#: Each way, by the word a test's id uses for it.
DEAD_HOSTS: dict[str, Callable[[], AbstractContextManager[str]]] = {
    "refused": refusing_address,
    "silent": silent_address,
}
