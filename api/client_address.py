"""Whom a request comes from, as far as the failed-key budget is concerned.

The peer's address, unless the operator says how many proxies stand in
front (``RAGSAGE_TRUSTED_PROXIES``): then the ``X-Forwarded-For`` entry that
many hops back, which the nearest trusted proxy wrote and the client could
not forge.  An IPv6 client is counted by its /64, the block one subscriber
is usually handed, so cycling through its own addresses buys no new budget.
"""

from __future__ import annotations

import ipaddress

from flask import request

_V6_BLOCK = 64


def client_address(trusted_proxies: int) -> str:
    """The address (an IPv6 one as its /64) whose budget this request spends."""
    address = request.remote_addr or "unknown"
    if trusted_proxies > 0:
        forwarded = [
            part.strip()
            for part in request.headers.get("X-Forwarded-For", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= trusted_proxies:
            address = forwarded[-trusted_proxies]
    return _counted_as(address)


def _counted_as(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]  # not an address (a Unix socket's peer): counted as itself
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{_V6_BLOCK}", strict=False))
    return str(parsed)
