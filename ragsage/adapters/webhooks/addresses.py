"""Which receivers a webhook may reach: a receiver URL's syntax and the kinds of address
that are never, or not by default, a webhook target.

A receiver URL is chosen by a user, so a careless or hostile one could point at
the metadata service, a database port or anything else only the server can see
(server-side request forgery).  What can be judged without the network is judged
here; a host name is judged on the addresses it resolves to when a delivery is
sent, by the sender (:mod:`ragsage.adapters.webhooks.sender`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_CLOUD_METADATA: frozenset[_Address] = frozenset(
    {ipaddress.IPv4Address("169.254.169.254"), ipaddress.IPv6Address("fd00:ec2::254")}
)
# Linux connects 0.0.0.0 to the local host, and no other 0/8 address is a real host.
_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
# Older Pythons call most of 192.0.0.0/24 global; it holds Oracle's old metadata address.
_PROTOCOL_ASSIGNMENTS = ipaddress.IPv4Network("192.0.0.0/24")
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")

_HOST_NAME = re.compile(r"[a-z0-9_.-]+")


class TargetRefused(Exception):
    """The receiver's host is, or resolves to, an address webhooks may not reach."""


def refusal(address: str, *, allow_private: bool = False) -> str | None:
    """Why ``address`` may not be a webhook target, or None if it may.

    With ``allow_private`` only addresses that never name a single host
    (unspecified, multicast) and the cloud metadata service are refused.
    """
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    if isinstance(parsed, ipaddress.IPv6Address):
        return _ipv6_refusal(parsed, allow_private)
    return _ipv4_refusal(parsed, allow_private)


def _ipv4_refusal(address: ipaddress.IPv4Address, allow_private: bool) -> str | None:
    if address in _THIS_NETWORK:
        return "an unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address in _CLOUD_METADATA:
        # Never a receiver, even on premises: it hands out the host's cloud credentials.
        return "the cloud metadata address"
    if allow_private:
        return None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address in _SHARED:
        return "a carrier-grade NAT address"
    if address in _PROTOCOL_ASSIGNMENTS:
        return "a special-purpose address"
    return _common_refusal(address)


def _ipv6_refusal(address: ipaddress.IPv6Address, allow_private: bool) -> str | None:
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address in _CLOUD_METADATA:
        return "the cloud metadata address"
    inner, translated = _embedded_ipv4(address)
    if inner is not None:
        reason = _ipv4_refusal(inner, allow_private)
        if reason is not None:
            return f"{reason} (IPv4 {inner} inside IPv6)"
        if translated:
            # Packets for these really go to the IPv4 host, so its verdict is the one that counts.
            return None
    if allow_private:
        return None
    return _ipv6_private_refusal(address)


def _ipv6_private_refusal(address: ipaddress.IPv6Address) -> str | None:
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address in _UNIQUE_LOCAL:
        return "a unique-local address"
    if address.is_site_local:
        return "a site-local address"
    if address in _LOCAL_NAT64:
        return "a local-use NAT64 address"
    return _common_refusal(address)


def _common_refusal(address: _Address) -> str | None:
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a non-public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address | None, bool]:
    """The IPv4 address carried inside ``address``, and whether traffic is translated to it."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped, True
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), True
    if address.sixtofour is not None:
        return address.sixtofour, False
    if int(address) >> 32 == 0 and not address.is_loopback:
        return ipaddress.IPv4Address(int(address)), False  # the deprecated IPv4-compatible form
    return None, False


@dataclass(frozen=True, slots=True)
class Target:
    """A receiver URL, split as the sender connects to it and frames its request."""

    scheme: str
    host: str  # without brackets, IDNA-encoded: what is resolved and connected to
    port: int | None
    path: str
    host_header: str


def check_url(url: str) -> str:
    """The host of ``url``; ValueError, saying what is wrong, unless it is a usable receiver URL.

    Only the syntax is checked; where a name points is decided at delivery time.
    """
    return parse_target(url).host


def parse_target(url: str) -> Target:
    """``url`` split for sending; ValueError, saying what is wrong, unless it is usable."""
    if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
        raise ValueError("a webhook URL may not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a valid webhook URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"a webhook URL must use http or https, not {scheme or 'no scheme'!r}")
    if "@" in parts.netloc:
        raise ValueError("a webhook URL may not carry a user name or password")
    if "#" in url:
        raise ValueError("a webhook URL may not have a fragment (#...)")
    if port == 0:
        raise ValueError("a webhook URL may not use port 0")
    host = _host(parts.hostname or "")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not path.isascii():
        raise ValueError("a webhook URL's path and query must be ASCII; percent-encode the rest")
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        shown = f"{shown}:{port}"
    return Target(scheme, host, port, path, shown)


def _host(hostname: str) -> str:
    if not hostname:
        raise ValueError("a webhook URL needs a host")
    if is_address(hostname):
        if "%" in hostname:
            raise ValueError("a webhook URL may not name an IPv6 zone")
        return hostname
    try:
        encoded = hostname.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"{hostname!r} is not a valid host name") from None
    if not _HOST_NAME.fullmatch(encoded):
        raise ValueError(f"{hostname!r} is not a valid host name")
    return encoded


def is_address(host: str) -> bool:
    """Whether a URL's host is an IP address literal rather than a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class ReceiverAddresses:
    """The receiver guard of :mod:`ragsage.management.webhooks`: a URL's syntax now,
    and a literal address's kind; a name is judged after each resolution."""

    def host_of(self, url: str) -> str:
        return check_url(url)

    def refusal(self, host: str) -> str | None:
        return refusal(host) if is_address(host) else None
