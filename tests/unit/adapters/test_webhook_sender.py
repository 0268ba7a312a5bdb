"""The webhook sender reaches public receivers and nothing inside the network.

A real HTTP server on 127.0.0.1 stands in for the receiver; a resolver the
tests control plays DNS, so a name can be made to point anywhere, including at
names real DNS has never heard of.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragsage.adapters.webhooks.addresses import TargetRefused, check_url, refusal
from ragsage.adapters.webhooks.sender import Sender, SendResult

HUGE_BYTES = 50 * 1024 * 1024  # far more than socket buffers hold, so a full read would show


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A loopback HTTP server that records every request and answers by path."""

    port: int
    requests: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    huge_write_failed: threading.Event = field(default_factory=threading.Event)

    def url(self, host: str = "127.0.0.1", path: str = "/ok") -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [request.path for request in self.requests]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.requests.append(Received(self.path, dict(self.headers.items()), body))
            if self.path == "/hang":
                state.release.wait(timeout=30)
                return
            if self.path == "/huge":
                self._send_huge()
                return
            status = {"/fail": 500, "/redirect": 302}.get(self.path, 200)
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def _send_huge(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            block = b"x" * 65536
            try:
                for _ in range(HUGE_BYTES // len(block)):
                    self.wfile.write(block)
            except OSError:
                state.huge_write_failed.set()

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class FakeDns:
    """A resolver with a fixed table, remembering what it was asked."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append((host, port))
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(self.table[host])


async def send(
    url: str,
    *,
    allow_private: bool = False,
    resolver: FakeDns | None = None,
    timeout: float = 5.0,
    body: bytes = b'{"event": "ping"}',
    headers: dict[str, str] | None = None,
) -> SendResult:
    sender = Sender(timeout=timeout, allow_private=allow_private, resolver=resolver)
    try:
        return await sender.post(url, body, headers or {})
    finally:
        await sender.aclose()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("169.254.169.254", "the cloud metadata address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address (IPv4 127.0.0.1 inside IPv6)"),
        ("0.0.0.0", "an unspecified address"),
        ("fc00::1", "a unique-local address"),
        ("fd12:3456::1", "a unique-local address"),
    ],
)
async def test_a_name_resolving_inside_the_network_is_refused(
    receiver: Receiver, address: str, reason: str
) -> None:
    dns = FakeDns({"hooks.example": [address]})
    result = await send(receiver.url("hooks.example"), resolver=dns)

    assert result.status is None and not result.delivered
    assert result.error is not None
    # The owner learns the name was refused, never where it points inside the network.
    assert result.error.startswith("hooks.example does not resolve to a public address")
    assert address not in result.error and reason not in result.error
    assert dns.asked == [("hooks.example", receiver.port)]
    assert receiver.requests == []


@pytest.mark.parametrize(
    ("address", "reason"),
    [("127.0.0.1", "a loopback address"), ("169.254.169.254", "the cloud metadata address")],
)
async def test_where_private_targets_are_allowed_a_refusal_names_the_address(
    receiver: Receiver, address: str, reason: str
) -> None:
    dns = FakeDns({"hooks.example": [address]})
    result = await send(receiver.url("hooks.example"), resolver=dns, allow_private=True)

    if reason == "a loopback address":
        assert result.delivered
    else:
        assert result.error == (
            f"hooks.example resolves to {address}, {reason}; such targets are never allowed"
        )


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
async def test_an_ip_literal_url_is_checked_without_asking_dns(
    receiver: Receiver, host: str
) -> None:
    dns = FakeDns({})
    result = await send(receiver.url(host), resolver=dns)

    assert result.status is None
    assert result.error == (
        f"{host.strip('[]')} is a loopback address; private targets are not allowed"
    )
    assert dns.asked == []
    assert receiver.requests == []


async def test_one_private_address_among_public_ones_refuses_the_whole_request(
    receiver: Receiver,
) -> None:
    dns = FakeDns({"mixed.example": ["93.184.216.34", "10.0.0.5"]})
    result = await send(receiver.url("mixed.example"), resolver=dns)

    assert result.status is None and result.error is not None
    assert result.error.startswith("mixed.example does not resolve to a public address")
    assert "10.0.0.5" not in result.error
    assert receiver.requests == []


async def test_an_allowed_private_receiver_gets_the_post_on_the_checked_address(
    receiver: Receiver,
) -> None:
    # receiver.test exists only in this resolver: reaching the server at all shows the
    # connection went to the address that was checked, with no second lookup.
    dns = FakeDns({"receiver.test": ["127.0.0.1"]})
    headers = {
        "Content-Type": "application/json",
        "X-Webhook-Signature": "sha256=0123abcd",
        "Host": "somewhere-else.example",
    }
    result = await send(
        receiver.url("receiver.test", "/hooks/in?x=1"),
        allow_private=True,
        resolver=dns,
        body=b'{"event": "document.indexed"}',
        headers=headers,
    )

    assert result.delivered and result.status == 200 and result.error is None
    assert result.latency_ms > 0
    assert dns.asked == [("receiver.test", receiver.port)]
    [received] = receiver.requests
    assert received.path == "/hooks/in?x=1"
    assert received.headers["Host"] == f"receiver.test:{receiver.port}"
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["X-Webhook-Signature"] == "sha256=0123abcd"
    assert received.body == b'{"event": "document.indexed"}'


@pytest.mark.parametrize("host", ["anywhere.test", "0.0.0.0"])
async def test_the_unspecified_address_is_refused_even_when_private_targets_are_allowed(
    receiver: Receiver, host: str
) -> None:
    dns = FakeDns({"anywhere.test": ["0.0.0.0"]})
    result = await send(receiver.url(host), allow_private=True, resolver=dns)

    assert result.status is None and result.error is not None
    assert "an unspecified address; such targets are never allowed" in result.error
    assert receiver.requests == []


async def test_a_server_error_is_reported_with_its_status(receiver: Receiver) -> None:
    result = await send(receiver.url(path="/fail"), allow_private=True)

    assert result.status == 500 and not result.delivered
    assert result.error == "HTTP 500"


async def test_a_redirect_is_not_followed(receiver: Receiver) -> None:
    result = await send(receiver.url(path="/redirect"), allow_private=True)

    assert result.status == 302 and not result.delivered
    assert result.error == "HTTP 302 (redirects are not followed)"
    assert receiver.paths() == ["/redirect"]


async def test_a_receiver_that_never_answers_times_out_within_the_deadline(
    receiver: Receiver,
) -> None:
    started = time.perf_counter()
    result = await send(receiver.url(path="/hang"), allow_private=True, timeout=0.5)
    elapsed = time.perf_counter() - started

    assert result.status is None
    assert result.error == "timed out after 0.5 s"
    assert elapsed < 5
    assert receiver.paths() == ["/hang"]


async def test_nothing_listening_is_a_refused_connection() -> None:
    result = await send(f"http://127.0.0.1:{free_port()}/", allow_private=True)

    assert result.status is None
    assert result.error == "connection refused"


async def test_a_huge_reply_is_abandoned_after_the_status(receiver: Receiver) -> None:
    result = await send(receiver.url(path="/huge"), allow_private=True, timeout=30)

    assert result.status == 200 and result.delivered and result.error is None
    # The server could not write it all: the sender hung up instead of reading on.
    assert receiver.huge_write_failed.wait(timeout=10)


async def test_a_name_that_does_not_resolve_is_reported() -> None:
    result = await send("https://nowhere.test/", resolver=FakeDns({}), allow_private=True)

    assert result.status is None
    assert result.error == "nowhere.test could not be resolved (name or service not known)"


async def test_an_unknown_name_reads_as_a_refused_one_where_private_targets_are_refused() -> None:
    unknown = await send("https://nowhere.test/", resolver=FakeDns({}))
    inside = await send("https://nowhere.test/", resolver=FakeDns({"nowhere.test": ["10.9.8.7"]}))

    assert unknown.error is not None and unknown.error == inside.error


async def test_tls_names_the_host_while_tcp_goes_to_the_checked_address() -> None:
    # A bare TCP listener captures the TLS ClientHello, whose SNI must carry the name.
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    port = listener.getsockname()[1]
    hello = bytearray()

    def capture() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(5)
            hello.extend(connection.recv(65536))

    thread = threading.Thread(target=capture, daemon=True)
    thread.start()
    try:
        dns = FakeDns({"secure.test": ["127.0.0.1"]})
        result = await send(f"https://secure.test:{port}/", allow_private=True, resolver=dns)
    finally:
        thread.join(timeout=10)
        listener.close()

    assert hello[:1] == b"\x16"  # a TLS handshake record
    assert b"secure.test" in hello
    assert result.status is None and result.error is not None


async def test_the_system_resolver_is_checked_too(receiver: Receiver) -> None:
    result = await send(receiver.url("localhost"))

    assert result.status is None and result.error is not None
    assert result.error.startswith("localhost does not resolve to a public address")
    assert receiver.requests == []


async def test_an_invalid_url_is_reported_not_raised() -> None:
    result = await send("ftp://files.example/hook")

    assert result.status is None
    assert result.error == "a webhook URL must use http or https, not 'ftp'"


def test_the_refused_error_is_an_exception() -> None:
    assert issubclass(TargetRefused, Exception)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("93.184.216.34", None),
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("2001:4860:4860::8888", None),
        ("::ffff:93.184.216.34", None),
        ("64:ff9b::5db8:d822", None),
        ("127.0.0.1", "a loopback address"),
        ("127.255.0.9", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("172.31.255.255", "a private address"),
        ("192.168.1.1", "a private address"),
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("100.100.100.200", "a carrier-grade NAT address"),
        ("169.254.169.254", "the cloud metadata address"),
        ("fd00:ec2::254", "the cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("fc00::1", "a unique-local address"),
        ("fd12:3456::1", "a unique-local address"),
        ("fec0::1", "a site-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("0.1.2.3", "an unspecified address"),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("255.255.255.255", "a reserved address"),
        ("192.0.0.192", "a special-purpose address"),
        ("::ffff:127.0.0.1", "a loopback address (IPv4 127.0.0.1 inside IPv6)"),
        ("::ffff:a9fe:a9fe", "the cloud metadata address (IPv4 169.254.169.254 inside IPv6)"),
        ("::ffff:10.0.0.1", "a private address (IPv4 10.0.0.1 inside IPv6)"),
        ("::127.0.0.1", "a loopback address (IPv4 127.0.0.1 inside IPv6)"),
        ("2002:7f00:1::", "a loopback address (IPv4 127.0.0.1 inside IPv6)"),
        ("2002:a00:1::", "a private address (IPv4 10.0.0.1 inside IPv6)"),
        ("64:ff9b::7f00:1", "a loopback address (IPv4 127.0.0.1 inside IPv6)"),
        ("64:ff9b::a9fe:a9fe", "the cloud metadata address (IPv4 169.254.169.254 inside IPv6)"),
        ("64:ff9b:1::1", "a local-use NAT64 address"),
        ("not-an-address", "not an IP address"),
    ],
)
def test_refusal_names_why_an_address_is_not_a_target(address: str, reason: str | None) -> None:
    assert refusal(address) == reason


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", None),
        ("10.1.2.3", None),
        ("::1", None),
        ("fd12:3456::1", None),
        ("169.254.169.254", "the cloud metadata address"),
        ("fd00:ec2::254", "the cloud metadata address"),
        ("::ffff:169.254.169.254", "the cloud metadata address (IPv4 169.254.169.254 inside IPv6)"),
        ("::ffff:127.0.0.1", None),
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
        ("::ffff:0.0.0.0", "an unspecified address (IPv4 0.0.0.0 inside IPv6)"),
        ("239.1.2.3", "a multicast address"),
        ("ff05::2", "a multicast address"),
    ],
)
def test_allowing_private_targets_still_refuses_what_is_never_a_receiver(
    address: str, reason: str | None
) -> None:
    assert refusal(address, allow_private=True) == reason


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/in",
        "http://hooks.example.com:8080/in?team=7",
        "https://10.0.0.5/in",  # where a host points is decided when sending
        "http://[2606:4700::1111]:8443/",
        "https://bücher.example/hook",
    ],
)
def test_check_url_accepts_http_and_https_urls(url: str) -> None:
    check_url(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/", "must use http or https, not 'ftp'"),
        ("file:///etc/passwd", "must use http or https, not 'file'"),
        ("hooks.example.com/in", "must use http or https, not 'no scheme'"),
        ("https:///in", "needs a host"),
        ("https://user:secret@hooks.example.com/", "may not carry a user name or password"),
        ("https://user@hooks.example.com/", "may not carry a user name or password"),
        ("https://hooks.example.com/in#part", "may not have a fragment"),
        ("https://hooks.example.com/in#", "may not have a fragment"),
        ("https://hooks.example.com:99999/", "not a valid webhook URL"),
        ("https://hooks.example.com:0/", "may not use port 0"),
        ("https://hooks.example.com/a b", "may not contain spaces or control characters"),
        ("https://hooks.example.com/\r\nX-Injected: 1", "may not contain spaces or control"),
        ("https://hooks.example.com/pâth", "must be ASCII"),
        ("https://[fe80::1%25eth0]/", "may not name an IPv6 zone"),
        ("https://hooks!.example.com/", "is not a valid host name"),
    ],
)
def test_check_url_says_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("?", r"\?")):
        check_url(url)
