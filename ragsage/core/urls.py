"""URL helpers shared by the HTTP clients (agent tools, evaluation)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` removed, for messages and logs."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))
