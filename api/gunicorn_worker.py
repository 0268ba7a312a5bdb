"""gunicorn's threaded worker, answering malformed requests in the API's JSON error shape.

gunicorn refuses some requests before the app sees them (a request line or a
header beyond its limits, a malformed header) and writes an HTML page for
them.  Clients of a JSON API should parse every error the same way, so this
worker writes ``{"error": {"code", "message"}}`` instead.  Errors of the app's
own making (a bad response header) still go through gunicorn's handling.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.http import errors
from gunicorn.workers.gthread import ThreadWorker

# Refusals with their own status; any other client parse error is a 400.
_STATUS: tuple[tuple[type[Exception], int, str, str], ...] = (
    (errors.LimitRequestLine, 414, "URI Too Long", "uri_too_long"),
    (errors.LimitRequestHeaders, 431, "Request Header Fields Too Large", "headers_too_large"),
    (errors.ExpectationFailed, 417, "Expectation Failed", "expectation_failed"),
    (errors.UnsupportedTransferCoding, 501, "Not Implemented", "unsupported_transfer_coding"),
    (errors.ForbiddenProxyRequest, 403, "Forbidden", "forbidden"),
)
_NOT_THE_CLIENTS = (
    errors.InvalidResponseHeader,
    errors.InvalidResponseHeaderName,
    errors.ConfigurationProblem,
    errors.NoMoreData,
)
_MESSAGES = {
    414: "the request line (method, path and query) is too long",
    431: "the request's headers are too many or too large",
    417: "the Expect header asks for something this server does not do",
    501: "the request uses a transfer coding this server does not accept",
    403: "the request is forbidden",
    400: "the request is not valid HTTP",
}


def json_refusal(exc: BaseException) -> tuple[int, str, bytes] | None:
    """(status, reason, JSON body) for a request gunicorn refused, None to leave it alone."""
    if not isinstance(exc, errors.ParseException) or isinstance(exc, _NOT_THE_CLIENTS):
        return None
    status, reason, code = 400, "Bad Request", "bad_request"
    for kind, kind_status, kind_reason, kind_code in _STATUS:
        if isinstance(exc, kind):
            status, reason, code = kind_status, kind_reason, kind_code
            break
    # The exception's own text can quote the request; only a fixed message is sent.
    body = json.dumps({"error": {"code": code, "message": _MESSAGES[status]}}).encode()
    return status, reason, body


class JsonErrorWorker(ThreadWorker):  # type: ignore[misc]
    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        refusal = json_refusal(exc)
        if refusal is None:
            super().handle_error(req, client, addr, exc)
            return
        status, reason, body = refusal
        peer = addr[0] if addr else "unix socket"
        self.log.warning("refused a request from %s: %s", peer, type(exc).__name__)
        head = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except OSError:
            self.log.debug("could not send the refusal")
