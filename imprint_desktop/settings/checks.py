"""Checks of text settings beyond their kind: what a server, a proxy or a notes folder may be.

A :class:`~.declaration.Setting` names its check (``check=``); the check returns a problem in words
for the validation message, or None. Addresses are read by :mod:`imprint_desktop.core.urls`, as the
remote provider and ``fetch_url`` read them, so the settings refuse what those would refuse.
"""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

from imprint_desktop.core.urls import NotHttpUrl, http_url, proxy_url


def check_http_url(text: str) -> str | None:
    """Accept an absolute http(s) URL with a host, as the remote provider reads it
    (:func:`~imprint_desktop.core.urls.http_url`)."""
    try:
        http_url(text)
    except NotHttpUrl:
        return f"must be an http:// or https:// address (got {text!r})"
    return None


def check_proxy_url(text: str) -> str | None:
    """Accept an http, https or socks5 proxy URL with a host
    (:func:`~imprint_desktop.core.urls.proxy_url`)."""
    try:
        proxy_url(text)
    except NotHttpUrl:
        return f"must be a proxy address such as http://proxy:3128 (got {text!r})"
    return None


def check_relative_folder(text: str) -> str | None:
    """Accept a folder name inside the workspace: relative and without ``..``."""
    for flavour in (PurePosixPath, PureWindowsPath):
        path = flavour(text)
        if path.is_absolute() or path.anchor or ".." in path.parts:
            return f"must be a folder inside the workspace, such as 'notes' (got {text!r})"
    return None
