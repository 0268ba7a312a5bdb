"""A webhook receiver in a process of its own, for tests: records every POST it gets.

Run as ``python webhook_receiver.py PORT_FILE LOG_FILE``: it binds a free port on
127.0.0.1, writes the port to PORT_FILE, and appends one JSON line per request
to LOG_FILE (path, headers, body, the status it answered, when).  How it
answers each path is set with ``POST /_mode/<path>`` and a body of ``ok``
(200), ``fail`` (500) or ``hang`` (holds the request 30 s, answering nothing).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_modes: dict[str, str] = {}
_lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path: Path

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if len(body) < length:
            # The sender died mid-request (a SIGKILLed worker): nothing arrived to answer.
            return
        if self.path.startswith("/_mode/"):
            with _lock:
                _modes["/" + self.path.removeprefix("/_mode/")] = body.decode()
            self._answer(200)
            return
        with _lock:
            mode = _modes.get(self.path, "ok")
        if mode == "hang":
            time.sleep(30)
            return
        status = 500 if mode == "fail" else 200
        record = {
            "path": self.path,
            "headers": {name.lower(): value for name, value in self.headers.items()},
            "body": body.decode("utf-8"),
            "status": status,
            "at": time.time(),
        }
        with _lock, self.log_path.open("a") as log:
            log.write(json.dumps(record) + "\n")
        self._answer(status)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def main() -> None:
    port_file, log_file = Path(sys.argv[1]), Path(sys.argv[2])
    _Handler.log_path = log_file
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
