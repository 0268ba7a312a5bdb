"""A loopback HTTP server that speaks Voyage's and OpenAI's wire formats.

Tests point the real SDKs at it.  By default it answers like the providers do
(embeddings, rerank, chat completions whole or streamed as server-sent events);
a test queues scripted replies per path to play rate limits, outages, bad
credentials and malformed bodies, and reads back every request it received.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "sk-test-4f1c9e7a2b8d6035-secret"


@dataclass
class Reply:
    """One scripted answer: a status, headers and a body (JSON-encoded if not bytes)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Received:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


def vector_for(text: str, dimension: int) -> list[float]:
    """The deterministic vector the server returns for ``text`` (float32-exact)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    values = [(digest[i % len(digest)] - 127.5) / 128 for i in range(dimension)]
    return [struct.unpack("<f", struct.pack("<f", value))[0] for value in values]


def overlap(query: str, document: str) -> float:
    wanted = set(query.lower().split())
    return len(wanted & set(document.lower().split())) / max(1, len(wanted))


class ProviderServer:
    """The server, its scripted replies and what it received."""

    def __init__(self, *, dimension: int = 1024, api_key: str = API_KEY) -> None:
        self.dimension = dimension
        self.api_key = api_key
        self.chat_reply = "Hello from the test model."
        self.received: list[Received] = []
        self.scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self.stream_gate: threading.Semaphore | None = None
        self.gate_timeouts = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._http.daemon_threads = True
        self._http.block_on_close = False
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ProviderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def script(self, path: str, *replies: Reply) -> None:
        """Answer the next requests to ``path`` (e.g. ``/v1/embeddings``) with ``replies``."""
        self.scripts[path].extend(replies)

    def requests_to(self, path: str) -> list[Received]:
        return [request for request in self.received if request.path == path]

    # -- the default answers ------------------------------------------------

    def _authorised(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.api_key}"

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        texts = body["input"]
        width = body.get("output_dimension") or body.get("dimensions") or self.dimension
        data = []
        for index, text in enumerate(texts):
            vector = vector_for(text, width)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{width}f", *vector)).decode()
            data.append({"object": "embedding", "embedding": encoded, "index": index})
        usage = {"total_tokens": sum(len(t.split()) for t in texts), "prompt_tokens": 0}
        return Reply(body={"object": "list", "data": data, "model": body["model"], "usage": usage})

    def _rerank(self, body: dict[str, Any]) -> Reply:
        scores = [overlap(body["query"], document) for document in body["documents"]]
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        data = [{"index": i, "relevance_score": scores[i]} for i in ranked]
        return Reply(body={"object": "list", "data": data, "usage": {"total_tokens": 10}})

    def _completion(self, body: dict[str, Any]) -> Reply:
        message = {"role": "assistant", "content": self.chat_reply}
        return Reply(
            body={
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    def stream_tokens(self) -> list[str]:
        """The pieces a streamed reply is sent in: one per word of ``chat_reply``."""
        words = self.chat_reply.split(" ")
        return [word if i == 0 else " " + word for i, word in enumerate(words)]

    def _stream_events(self, model: str) -> Iterator[bytes]:
        def event(delta: dict[str, Any], finish: str | None) -> bytes:
            chunk = {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        yield event({"role": "assistant", "content": ""}, None)
        for number, token in enumerate(self.stream_tokens()):
            if number and self.stream_gate is not None:
                # Send the next token only once the client has handed on the last:
                # a client that buffered the whole reply would stall here.
                if not self.stream_gate.acquire(timeout=5):
                    self.gate_timeouts += 1
            yield event({"content": token}, None)
        yield event({}, "stop")
        yield b"data: [DONE]\n\n"

    def _default(self, path: str, body: Any) -> Reply | Callable[[], Iterator[bytes]]:
        if path == "/v1/embeddings":
            return self._embeddings(body)
        if path == "/v1/rerank":
            return self._rerank(body)
        if path == "/v1/chat/completions":
            if body.get("stream"):
                return lambda: self._stream_events(body["model"])
            return self._completion(body)
        return Reply(404, {"detail": f"no route {path}"})

    def _answer(
        self, path: str, headers: dict[str, str], body: Any
    ) -> Reply | Callable[[], Iterator[bytes]]:
        with self._lock:
            self.received.append(Received(path, headers, body))
            scripted = self.scripts[path]
            if scripted:
                return scripted.popleft()
        if not self._authorised(headers):
            return Reply(401, {"detail": "Provided API key is invalid."})
        return self._default(path, body)

    # -- HTTP plumbing ------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None  # keep test output quiet

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    body: Any = json.loads(raw or b"{}")
                except ValueError:
                    body = raw
                reply = server._answer(self.path, headers, body)
                if callable(reply):
                    self._stream(reply())
                else:
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                if not isinstance(payload, bytes):
                    payload = json.dumps(payload).encode()
                self.send_response(reply.status)
                headers = {"content-type": "application/json", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, events: Iterator[bytes]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for data in events:
                        self.wfile.write(data)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a test that stops early)

        return Handler
