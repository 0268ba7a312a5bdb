"""Every request body is held to its limit on the bytes read, whatever the transfer encoding.

The attack: the JSON cap was checked on ``Content-Length`` only, so a chunked
body (which has none) was read and parsed whole; a 5.7 MiB search was parsed
before its extra field was refused, and only Flask's ``MAX_CONTENT_LENGTH``,
about 140 MiB, held.  Every API thread could be made to build that much at once.

Every route that takes a body is read from ``/openapi.json``, with the limit
the document publishes for each media type (``x-max-bytes``), so a new route
is covered without touching this file.  Each gets a body one byte over its
limit (413 ``too_large``, the limit named) and one at it (not refused for its
size), chunked without a ``Content-Length`` and again whole with one; and a
chunked stream far longer than any limit, which the server must answer while
the client is still sending it.  The search and the JSON upload go to
gunicorn as well, which is what ``ragsage api`` (and so ``make run``) serves,
and there the worker's peak memory is watched too.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from ragsage.core.keys import Role
from tests.integration.api_harness import ApiServer, make_key, serve
from tests.integration.gunicorn_harness import Gunicorn, start_gunicorn
from tests.integration.worker_harness import Deployment

NAMESPACE = "bodies"
# A small upload cap keeps the upload route's limits (a few hundred KiB over
# it) cheap to send past; the JSON routes keep their 1 MiB.
CAP = 256 * 1024
JSON = "application/json"
MULTIPART = "multipart/form-data"
PIECE = 64 * 1024
# Far longer than any limit here (the largest, the JSON upload's at the default
# cap, is about 134 MiB) ...
STREAM = 192 * 1024 * 1024
# ... and what may have been sent past a limit before the answer arrives: what
# waits in the server's receive buffer (which Linux grows, up to 32 MiB on
# loopback) and the little this side keeps.  Measured: at most 1.2 MB past the
# limit on either server.  A server that reads a body whole before answering is
# sent all of STREAM first (147 MB at the default cap, before the fix).
SLACK = 16 * 1024 * 1024
# Growth of a gunicorn worker's peak memory allowed while it refuses a stream:
# the limit's bytes and their copies, nowhere near the stream's size.
PEAK_GROWTH = 32 * 1024 * 1024


@dataclass(frozen=True)
class BodyRoute:
    """An operation that takes a body, in one of its media types, with its limit."""

    method: str
    path: str
    media_type: str
    limit: int
    key: str
    file_field: str | None

    def __str__(self) -> str:
        return f"{self.method} {self.path} ({self.media_type}, {self.limit:,} bytes)"


@pytest.fixture
def small(deployment: Deployment) -> Deployment:
    """The deployment with a small upload cap."""
    settings = deployment.settings.replace(max_upload_bytes=CAP)
    return replace(deployment, settings=settings, env={**deployment.env, **settings.to_env()})


@pytest.fixture
def served(small: Deployment) -> Iterator[ApiServer]:
    yield from serve(small)


def _keys(deployment: Deployment) -> list[str]:
    # An admin key may do all but issue restricted keys, which only a delegate key does.
    return [make_key(deployment.settings, NAMESPACE, role) for role in (Role.ADMIN, Role.DELEGATE)]


def _filled(template: str, parameters: Sequence[dict[str, Any]]) -> str:
    """``template`` with each path parameter given a value of its type."""
    path = template
    for parameter in parameters:
        if parameter["in"] == "path":
            value = "1" if parameter["schema"].get("type") == "integer" else str(uuid.uuid4())
            path = path.replace("{" + parameter["name"] + "}", value)
    return path


def _key_for(url: str, method: str, path: str, keys: Sequence[str]) -> str:
    """The first key the route lets in (probed with a body that is not even JSON)."""
    for key in keys:
        probe = httpx.request(
            method,
            url + path,
            content=b"{",
            headers={"Authorization": f"Bearer {key}", "Content-Type": JSON},
        )
        if probe.status_code not in (401, 403):
            return key
    raise AssertionError(f"no key may {method} {path}")


def _file_field(media: dict[str, Any]) -> str | None:
    properties = media.get("schema", {}).get("properties", {})
    return next((n for n, s in properties.items() if s.get("format") == "binary"), None)


def body_routes(url: str, keys: Sequence[str]) -> list[BodyRoute]:
    """Every operation of the served document that takes a body, per media type."""
    document = httpx.get(f"{url}/openapi.json").json()
    routes = []
    for template, item in document["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody")
            if body is None:
                continue
            assert "413" in operation["responses"], f"{method} {template} documents no 413"
            path = _filled(template, operation.get("parameters", []))
            key = _key_for(url, method.upper(), path, keys)
            for media_type, media in body["content"].items():
                limit = media["x-max-bytes"]
                field = _file_field(media)
                routes.append(BodyRoute(method.upper(), path, media_type, limit, key, field))
    named = {(r.method, r.path, r.media_type) for r in routes}
    assert {("POST", "/v1/search", JSON), ("POST", "/v1/documents", MULTIPART)} <= named
    return routes


def _boundary() -> str:
    return f"limit-{uuid.uuid4().hex}"


def _part_head(boundary: str, field: str) -> bytes:
    return (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; '
        'filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n'
    ).encode()


def _multipart(field: str, payload: bytes) -> tuple[bytes, str]:
    """One file part holding ``payload``, and the content type naming its boundary."""
    boundary = _boundary()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return _part_head(boundary, field) + payload + tail, f"{MULTIPART}; boundary={boundary}"


def padded(route: BodyRoute, size: int) -> tuple[bytes, str]:
    """A well-formed body of exactly ``size`` bytes for ``route``, and its content type.

    JSON: an empty object and whitespace, which JSON allows after a value (a
    body cut at its limit would still parse).  Multipart: one file part.
    """
    if route.media_type == JSON:
        return b"{}" + b" " * (size - 2), JSON
    field = route.file_field or "file"
    framing = len(_multipart(field, b"")[0])  # boundaries are all of one length
    return _multipart(field, b"a" * (size - framing))


def chunked(data: bytes) -> Iterator[bytes]:
    """``data`` in pieces: httpx sends an iterator chunked, without a Content-Length."""
    for start in range(0, len(data), PIECE):
        yield data[start : start + PIECE]


def _refusal_problem(response: httpx.Response, limit: int) -> str | None:
    """What is wrong with ``response`` as the refusal of a body over ``limit`` (None: nothing)."""
    if response.status_code != 413:
        return f"answered {response.status_code}: {response.text[:200]}"
    if not response.headers.get("content-type", "").startswith(JSON):
        return f"answered 413 as {response.headers.get('content-type')}"
    error = response.json()["error"]
    if error.get("code") != "too_large" or f"{limit:,}" not in error.get("message", ""):
        return f"answered 413 with {error}"
    return None


def _send(client: httpx.Client, route: BodyRoute, size: int, encoding: str) -> httpx.Response:
    """A body of ``size`` bytes sent to ``route`` chunked, or whole with its Content-Length."""
    body, kind = padded(route, size)
    reply = client.request(
        route.method,
        route.path,
        content=chunked(body) if encoding == "chunked" else body,
        headers={"Content-Type": kind},
    )
    sent_as = reply.request.headers
    if encoding == "chunked":
        assert sent_as.get("transfer-encoding") == "chunked" and "content-length" not in sent_as
    else:
        assert sent_as.get("content-length") == str(size)
    return reply


def over_and_at(client: httpx.Client, route: BodyRoute) -> list[str]:
    """Problems with the route's answers to bodies one byte over and at its limit."""
    problems = []
    for encoding in ("chunked", "content-length"):
        problem = _refusal_problem(_send(client, route, route.limit + 1, encoding), route.limit)
        if problem is not None:
            problems.append(f"{route}, one byte over, {encoding}: {problem}")
        if route.media_type == JSON:
            at = _send(client, route, route.limit, encoding)
            if at.status_code == 413 or at.status_code >= 500:
                problems.append(
                    f"{route}, at the limit, {encoding}: {at.status_code} {at.text[:200]}"
                )
    return problems


@dataclass(frozen=True)
class Streamed:
    status: int | None
    body: bytes
    sent: int  # body bytes handed to the connection when the first answer byte arrived


def _complete(received: bytes) -> bool:
    head, found, body = received.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def stream_past(
    port: int, route: BodyRoute, total: int = STREAM, declared: bool = False
) -> Streamed:
    """Send the route a body of ``total`` bytes, reading its answer meanwhile: chunked,
    or (``declared``) with its length in a Content-Length header."""
    if route.media_type == JSON:
        first, filler, kind = b"{}", b" " * PIECE, JSON
    else:
        boundary = _boundary()
        first = _part_head(boundary, route.file_field or "file")
        filler, kind = b"a" * PIECE, f"{MULTIPART}; boundary={boundary}"
    head = (
        f"{route.method} {route.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {route.key}\r\nContent-Type: {kind}\r\n"
        + (f"Content-Length: {total}" if declared else "Transfer-Encoding: chunked")
        + "\r\n\r\n"
    ).encode()
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Little may wait on this side, so what was handed over is near what was sent.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, PIECE)
    connection.settimeout(120)
    connection.connect(("127.0.0.1", port))
    sent = 0

    def send() -> None:
        nonlocal sent
        try:
            connection.sendall(head)
            piece = first
            while sent < total:
                piece = piece[: total - sent]
                framed = piece if declared else b"%x\r\n%s\r\n" % (len(piece), piece)
                connection.sendall(framed)
                sent += len(piece)
                piece = filler
            if not declared:
                connection.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server closed the connection; its answer is read below

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    received, sent_then = b"", None
    try:
        while not _complete(received):
            data = connection.recv(PIECE)
            if not data:
                break
            if sent_then is None:
                sent_then = sent
            received += data
    except OSError:
        pass  # a reset after the answer: what arrived is kept
    finally:
        try:
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sender.join(30)
        connection.close()
    status_line, _, rest = received.partition(b"\r\n")
    status = int(status_line.split()[1]) if status_line.startswith(b"HTTP/") else None
    body = rest.partition(b"\r\n\r\n")[2]
    return Streamed(status, body, sent if sent_then is None else sent_then)


def far_past(port: int, route: BodyRoute) -> list[str]:
    """Problems with the route's answers to streams far past its limit, chunked or declared."""
    problems = []
    for declared in (False, True):
        streamed = stream_past(port, route, declared=declared)
        how = "declared" if declared else "chunked"
        if streamed.status != 413:
            problems.append(f"{route}, {how}: {streamed.status} {streamed.body[:200]!r}")
        elif streamed.sent > route.limit + SLACK:
            problems.append(f"{route}, {how}: answered once {streamed.sent:,} bytes were sent")
    return problems


def test_every_route_refuses_a_chunked_body_one_byte_over_its_limit(
    served: ApiServer, small: Deployment
) -> None:
    routes = body_routes(served.url, _keys(small))
    problems = [p for route in routes for p in over_and_at(served.client(route.key), route)]
    assert problems == []


def test_every_route_answers_a_stream_far_past_its_limit_without_reading_it(
    served: ApiServer, small: Deployment
) -> None:
    routes = body_routes(served.url, _keys(small))
    port = int(served.url.rpartition(":")[2])
    problems = [problem for route in routes for problem in far_past(port, route)]
    assert problems == []


def _file(size: int) -> bytes:
    """``size`` bytes no other upload has (a duplicate would answer 200, not 202)."""
    tag = f"{uuid.uuid4().hex}\n".encode()
    return (tag + b"x" * size)[:size]


def _json_upload(size: int) -> bytes:
    content = base64.b64encode(_file(size)).decode()
    return json.dumps({"filename": "cap.txt", "content_base64": content}).encode()


def _multipart_upload(size: int) -> tuple[bytes, str]:
    return _multipart("file", _file(size))


def cap_problems(
    client: httpx.Client, cap: int, forms: Sequence[str] = (JSON, MULTIPART)
) -> list[str]:
    """Problems with chunked uploads of a file at the cap and one byte over it."""
    problems = []
    for form in forms:
        for size in (cap, cap + 1):
            if form == JSON:
                body, kind = _json_upload(size), JSON
            else:
                body, kind = _multipart_upload(size)
            reply = client.post(
                "/v1/documents", content=chunked(body), headers={"Content-Type": kind}
            )
            if size == cap and reply.status_code not in (200, 202):
                problems.append(f"{form}, a file at the cap: {reply.status_code} {reply.text}")
            if size > cap and (problem := _refusal_problem(reply, cap)) is not None:
                problems.append(f"{form}, a file one byte over the cap: {problem}")
    return problems


def test_an_upload_at_the_cap_is_taken_and_one_byte_over_is_refused(
    served: ApiServer, small: Deployment
) -> None:
    client = served.client(make_key(small.settings, NAMESPACE, Role.WRITE))
    assert cap_problems(client, CAP) == []


def _worker(server: Gunicorn) -> psutil.Process:
    children = psutil.Process(server.process.pid).children()
    assert len(children) == 1, children
    return children[0]


def _peak(process: psutil.Process) -> int:
    """The process's peak resident memory so far, in bytes (Linux's VmHWM)."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_gunicorn_holds_the_search_and_json_upload_limits_on_chunked_bodies(
    small: Deployment, tmp_path: Path
) -> None:
    server = start_gunicorn(small.env, tmp_path / "gunicorn.log", workers=1, threads=2)
    try:
        routes = [
            route
            for route in body_routes(server.url, _keys(small))
            if route.media_type == JSON and route.path in ("/v1/search", "/v1/documents")
        ]
        assert len(routes) == 2
        # First, while the worker's peak memory is still its own: the reported
        # request, a chunked search far longer than 5.7 MiB (a search's limit
        # does not depend on the upload cap this deployment shrinks).
        (search,) = [route for route in routes if route.path == "/v1/search"]
        worker = _worker(server)
        before = _peak(worker)
        started = time.monotonic()
        streamed = stream_past(server.port, search)
        elapsed = time.monotonic() - started
        growth = _peak(worker) - before
        print(
            f"sent {streamed.sent:,} bytes before the answer ({elapsed:.2f} s); "
            f"the worker's peak memory grew {growth:,} bytes"
        )
        assert streamed.status == 413, streamed
        assert streamed.sent < search.limit + SLACK
        assert growth < PEAK_GROWTH
        problems = []
        for route in routes:
            with httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {route.key}"}, timeout=60
            ) as client:
                problems += over_and_at(client, route)
            problems += far_past(server.port, route)
        with httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {routes[0].key}"},
            timeout=60,
        ) as client:
            problems += cap_problems(client, CAP, forms=(JSON,))
        assert problems == [], server.logs()
    finally:
        server.stop()
