"""Posts one webhook body to a receiver without letting the URL reach inside the network.

A receiver URL is chosen by a user, so a careless or hostile one could point at
the metadata service, a database port or anything else only the server can see
(server-side request forgery).  The check (:mod:`ragsage.adapters.webhooks.addresses`)
therefore runs when the request is sent, on the addresses the host name resolves
to at that moment, and the socket is opened to exactly the address that passed:
re-resolving would let a DNS answer that changes between the two lookups slip
through.

TLS still verifies the certificate against the URL's host name: httpcore hands
the origin's host, not the address we connected to, to ``start_tls``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpcore

from ragsage.adapters.webhooks.addresses import (
    Target,
    TargetRefused,
    is_address,
    parse_target,
    refusal,
)

_log = logging.getLogger(__name__)

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Turns ``(host, port)`` into the IP addresses to try, as strings."""

# The sender frames the request itself; a caller's copy of these would contradict it.
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_KEEPALIVE_SECONDS = 30.0
_DETAIL_CHARS = 120


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
            target = parse_target(url)
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


def _request_headers(target: Target, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
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
