"""Posts one webhook body to a receiver without letting the URL reach inside the network.

A receiver URL is chosen by a user, so a careless or hostile one could point at
the metadata service, a database port or anything else only the server can see
(server-side request forgery).  The check therefore runs when the request is
sent, on the addresses the host name resolves to at that moment, and the socket
is opened to exactly the address that passed: re-resolving would let a DNS
answer that changes between the two lookups slip through.

TLS still verifies the certificate against the URL's host name: httpcore hands
the origin's host, not the address we connected to, to ``start_tls``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import socket
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpcore

_log = logging.getLogger(__name__)

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Turns ``(host, port)`` into the IP addresses to try, as strings."""

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
# The sender frames the request itself; a caller's copy of these would contradict it.
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_KEEPALIVE_SECONDS = 30.0
_DETAIL_CHARS = 120


class TargetRefused(Exception):
    """The receiver's host is, or resolves to, an address webhooks may not reach."""


class _Unresolvable(Exception):
    """The receiver's host name has no address."""


# What a failed delivery can raise; anything else is a bug and is let through.
_FAILURES = (
    ValueError,
    TargetRefused,
    _Unresolvable,
    OSError,
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
)


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
class _Target:
    scheme: str
    host: str  # without brackets, IDNA-encoded: what is resolved and connected to
    port: int | None
    path: str
    host_header: str


def check_url(url: str) -> str:
    """The host of ``url``; ValueError, saying what is wrong, unless it is a usable receiver URL.

    Only the syntax is checked; where a name points is decided at delivery time.
    """
    return _parse(url).host


def _parse(url: str) -> _Target:
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
    return _Target(scheme, host, port, path, shown)


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


@dataclass(frozen=True, slots=True)
class SendResult:
    """What became of one delivery attempt."""

    status: int | None
    """The receiver's HTTP status; None if no response came."""
    latency_ms: float
    error: str | None
    """None for a 2xx answer, else a short reason fit to show the webhook's owner."""

    @property
    def delivered(self) -> bool:
        """Whether the receiver answered with a 2xx status."""
        return self.status is not None and 200 <= self.status < 300


def _system_resolver(threads: ThreadPoolExecutor) -> Resolver:
    """The system's resolver on threads of the sender's own.

    A lookup blocks its thread until the system resolver gives up, whatever
    deadline its caller keeps; on threads of their own, a tenant whose DNS
    never answers cannot take the threads the rest of the process runs on.
    """

    async def resolve(host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        infos = await loop.run_in_executor(
            threads, partial(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
        )
        return _unique_addresses(infos)

    return resolve


def _unique_addresses(infos: Iterable[tuple[Any, ...]]) -> list[str]:
    addresses: list[str] = []
    for info in infos:
        sockaddr = info[4]
        # A scope id only says which interface reaches a link-local address; the check
        # and the connect need the bare address.
        address = str(sockaddr[0]).partition("%")[0]
        if address not in addresses:
            addresses.append(address)
    return addresses


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """Resolves each host itself and connects only to addresses that pass the check."""

    def __init__(self, resolver: Resolver, allow_private: bool) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._resolver = resolver
        self._allow_private = allow_private

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._checked_addresses(host, port)
        options = None if socket_options is None else list(socket_options)
        failure: httpcore.ConnectError | None = None
        # Every address passed the check, so falling back to the next one is safe.
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address=local_address, socket_options=options
                )
            except httpcore.ConnectError as exc:
                failure = exc
        assert failure is not None  # _checked_addresses never returns an empty list
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise TargetRefused("unix sockets are never webhook targets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)

    async def _checked_addresses(self, host: str, port: int) -> list[str]:
        literal = is_address(host)
        if literal:
            addresses = [host]
        else:
            try:
                addresses = await self._resolver(host, port)
            except OSError as exc:
                raise self._hidden(
                    _Unresolvable(f"{host} could not be resolved ({_os_reason(exc)})"), host
                ) from None
            if not addresses:
                raise self._hidden(_Unresolvable(f"{host} resolves to no address"), host)
        # One bad address refuses the lot: trying only the good ones would still let
        # whoever controls the DNS steer some deliveries inside.
        for address in addresses:
            reason = refusal(address, allow_private=self._allow_private)
            if reason is not None:
                refused = TargetRefused(self._refusal_message(host, address, reason, literal))
                raise refused if literal else self._hidden(refused, host)
        return addresses

    def _refusal_message(self, host: str, address: str, reason: str, literal: bool) -> str:
        where = f"{host} is {reason}" if literal else f"{host} resolves to {address}, {reason}"
        if not self._allow_private and refusal(address, allow_private=True) is None:
            return f"{where}; private targets are not allowed"
        return f"{where}; such targets are never allowed"

    def _hidden(self, detail: Exception, host: str) -> Exception:
        """What the endpoint's owner is told of a name that may not be reached.

        Where private targets are refused, a tenant must not learn from the
        errors which internal names exist or where they point: unknown names
        and refused addresses read alike, and the detail goes to the log.
        """
        if self._allow_private:
            return detail
        _log.info("webhook target refused: %s", detail)
        return TargetRefused(
            f"{host} does not resolve to a public address (it is unknown, or points at a "
            "loopback, private, link-local or metadata address); private targets are not "
            "allowed"
        )


def is_address(host: str) -> bool:
    """Whether a URL's host is an IP address literal rather than a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Sender:
    """Delivers webhook bodies over a shared, guarded connection pool."""

    def __init__(
        self,
        *,
        timeout: float,
        allow_private: bool,
        resolver: Resolver | None = None,
        max_response_bytes: int = 4096,
        max_connections: int = 64,
    ) -> None:
        """``timeout`` bounds a whole delivery; ``allow_private`` is for on-premises receivers."""
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_response_bytes < 0:
            raise ValueError("max_response_bytes may not be negative")
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self._timeout = timeout
        self._max_response_bytes = max_response_bytes
        self._lookups = ThreadPoolExecutor(
            max_workers=min(max_connections, 32), thread_name_prefix="ragsage-webhook-dns"
        )
        self._pool = httpcore.AsyncConnectionPool(
            # One context for every connection: building it loads the CA bundle.
            ssl_context=httpcore.default_ssl_context(),
            max_connections=max_connections,
            keepalive_expiry=_KEEPALIVE_SECONDS,
            network_backend=_CheckedBackend(
                resolver or _system_resolver(self._lookups), allow_private
            ),
        )

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> SendResult:
        """POST ``body`` to ``url``; a failed delivery is reported, not raised. No redirects."""
        started = time.perf_counter()
        status: int | None = None
        error: str | None = None
        try:
            target = _parse(url)
            request_headers = _request_headers(target, headers)
            per_step = {key: self._timeout for key in ("connect", "read", "write", "pool")}
            async with asyncio.timeout(self._timeout):
                async with self._pool.stream(
                    "POST",
                    httpcore.URL(
                        scheme=target.scheme, host=target.host, port=target.port, target=target.path
                    ),
                    headers=request_headers,
                    content=body,
                    extensions={"timeout": per_step},
                ) as response:
                    status = response.status
                    await self._drain(response)
        except _FAILURES as exc:
            error = _describe(exc, self._timeout)
        latency_ms = (time.perf_counter() - started) * 1000
        if status is not None:
            # The status line is the receiver's answer; a body cut short after it changes nothing.
            error = _status_error(status)
        return SendResult(status=status, latency_ms=latency_ms, error=error)

    async def aclose(self) -> None:
        """Close the pooled connections; lookups still running are left to end alone."""
        await self._pool.aclose()
        self._lookups.shutdown(wait=False, cancel_futures=True)

    async def _drain(self, response: httpcore.Response) -> None:
        # Reading a short body to its end lets the connection be reused; a long one is
        # abandoned, which closes the connection instead of buffering it.
        chunks = response.aiter_stream()
        try:
            received = 0
            async for chunk in chunks:
                received += len(chunk)
                if received >= self._max_response_bytes:
                    break
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()


def _request_headers(target: _Target, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    encoded = [(b"Host", target.host_header.encode("ascii"))]
    for name, value in headers.items():
        if name.lower() in _OWN_HEADERS:
            continue
        try:
            encoded.append((name.encode("ascii"), value.encode("ascii")))
        except UnicodeEncodeError:
            # The value may be a secret, so only the name is named.
            raise ValueError(f"header {name!r} is not ASCII") from None
    return encoded


def _status_error(status: int) -> str | None:
    if 200 <= status < 300:
        return None
    if 300 <= status < 400:
        return f"HTTP {status} (redirects are not followed)"
    return f"HTTP {status}"


def _describe(exc: BaseException, timeout: float) -> str:
    """A short reason for a failed delivery; never echoes the request's headers or body."""
    if isinstance(exc, TimeoutError | httpcore.TimeoutException):
        return f"timed out after {timeout:g} s"
    if isinstance(exc, ValueError | TargetRefused | _Unresolvable):
        return str(exc)
    if isinstance(exc, httpcore.LocalProtocolError):
        # h11's message can quote a header value, which may be a signature or a token.
        return "the request could not be encoded (a header name or value is invalid)"
    if isinstance(exc, httpcore.RemoteProtocolError):
        return f"the receiver's reply was not valid HTTP: {str(exc)[:_DETAIL_CHARS]}"
    if isinstance(exc, httpcore.ConnectError):
        reason = _os_reason(exc)
        return reason if reason == "connection refused" else f"could not connect ({reason})"
    return f"network error ({_os_reason(exc)})"


def _os_reason(exc: BaseException) -> str:
    """The operating system's words for the deepest OS error behind ``exc``."""
    found: OSError | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            found = current
        current = current.__cause__ or current.__context__
    if isinstance(found, ConnectionRefusedError):
        return "connection refused"
    if found is not None and found.errno is not None and found.errno > 0:
        # asyncio's own wording repeats the address; the errno's is shorter and standard.
        return os.strerror(found.errno).lower()
    if found is not None:
        return str(found.strerror).lower()
    return str(exc)[:_DETAIL_CHARS] or type(exc).__name__


class ReceiverAddresses:
    """The receiver guard of :mod:`ragsage.management.webhooks`: a URL's syntax now,
    and a literal address's kind; a name is judged after each resolution."""

    def host_of(self, url: str) -> str:
        return check_url(url)

    def refusal(self, host: str) -> str | None:
        return refusal(host) if is_address(host) else None
