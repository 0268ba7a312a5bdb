"""Redis keys that name a namespace, so that ending a tenant can find them."""

from __future__ import annotations


def refused_requests_key(namespace: str) -> str:
    """The hash counting the namespace's requests refused by each rate limit."""
    return f"ragsage:usage:{namespace}:refused"
