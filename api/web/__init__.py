"""The web page people use: upload, watch jobs, ask, search, read the sources.

Static files served by the API itself (no build step, no other server).  The
page holds no secret: it asks for an API key and sends it as the bearer
header, like any other client.  Every response from here carries a strict
Content-Security-Policy: scripts and styles only from this origin, no inline
code, no frames, no requests to other hosts.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, abort, send_from_directory

STATIC = Path(__file__).resolve().parent / "static"
# What the page may load and where it may connect: only this origin, nothing inline.
CONTENT_SECURITY_POLICY = (
    # blob: for the page pictures the page fetches with its key and shows.
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
# The page's files, served by these names alone: nothing else in the folder, no way out of
# it.  The script is one ES module a screen, which app.js imports; a new one is named here.
_FILES = frozenset(
    {
        "app.css",
        "favicon.svg",
        "app.js",
        "shared.js",
        "session.js",
        "tabs.js",
        "documents.js",
        "uploads.js",
        "ask.js",
        "source.js",
        "search.js",
        "reindex.js",
    }
)

blueprint = Blueprint("web", __name__)


@blueprint.after_request
def _guarded(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    # A new release must reach the browser at once: revalidate, never guess.
    response.headers["Cache-Control"] = "no-cache"
    return response


@blueprint.get("/")
def page() -> Response:
    return send_from_directory(STATIC, "index.html", mimetype="text/html")


@blueprint.get("/web/<name>")
def asset(name: str) -> Response:
    if name not in _FILES:
        abort(404)
    return send_from_directory(STATIC, name)


@blueprint.get("/favicon.ico")
def favicon() -> Response:
    return send_from_directory(STATIC, "favicon.svg", mimetype="image/svg+xml")
