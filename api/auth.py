"""Bearer API keys: every request acts for exactly the key's namespace and role.

A key is looked up in the database on every request.  For searches, the
lookup of a key this process has already seen accepted goes out beside the
search instead of before it (:func:`run_checked`): the search starts with the
namespace the key had, and its results are sent only once the lookup, made
in the same hop to the event loop, has confirmed the key as it is now.  A
revoked key is refused as promptly as before, and a search saves a round
trip and a hop between threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from flask import Response, g, request

from api.errors import ApiError, error_response
from api.limits import Refusal
from api.services import services
from ragsage.adapters.postgres.keys import Principal, Role, authenticate_on, hash_key

_CHALLENGE = 'Bearer realm="ragsage"'
_REFUSED = "the API key is not valid or has been revoked"
# Read-only routes whose single loop hop carries the key check (run_checked).
_CHECKED_BESIDE = frozenset({"query.search"})
_T = TypeVar("_T")


def authenticate_request() -> None:
    """Resolve the Authorization header into ``g.principal`` or refuse with 401."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise ApiError(401, "unauthorized", "an API key is required: Authorization: Bearer rsk_...")
    here = services()
    digest = hash_key(key)
    seen = here.recent_keys.get(digest)
    refusal = here.limits.check_key(
        request.endpoint, digest, seen.scope.namespace if seen is not None else None
    )
    if refusal is not None:
        raise RateLimited(refusal)
    if request.endpoint in _CHECKED_BESIDE:
        known = here.recent_keys.get(digest)
        if known is not None:
            g.principal, g.unchecked_key = known, key
            return

    principal = here.run(authenticate_on(here.runtime.database, key))
    if principal is None:
        here.recent_keys.forget(digest)
        raise ApiError(401, "unauthorized", _REFUSED)
    here.recent_keys.remember(digest, principal)
    g.principal = principal


class RateLimited(Exception):
    """A request over one of its rate limits (answered 429 before any other work)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def run_checked(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """``services().run(coroutine)``, with the request's pending key check beside it.

    Whatever ``coroutine`` returns or raises reaches the caller only after
    the key has been confirmed to still name the same principal; otherwise
    the request is refused with 401.
    """
    here = services()
    key: str | None = g.pop("unchecked_key", None)
    if key is None:
        return here.run(coroutine)
    checking = key

    async def both() -> tuple[Principal | None, _T | Exception]:
        check = asyncio.ensure_future(authenticate_on(here.runtime.database, checking))
        try:
            outcome: _T | Exception = await coroutine
        except Exception as exc:  # noqa: BLE001 - held until the key is confirmed
            outcome = exc
        except BaseException:
            check.cancel()
            raise
        return await check, outcome

    checked, outcome = here.run(both())
    _confirm(key, checked)
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def settle_unchecked(response: Response) -> Response:
    """Check a key still pending when a response was made without :func:`run_checked`.

    A request refused before its search ran (a malformed body, say) must not
    tell a revoked key's holder more than a 401 would.
    """
    key: str | None = g.pop("unchecked_key", None)
    if key is None:
        return response
    here = services()
    checked = here.run(authenticate_on(here.runtime.database, key))
    try:
        _confirm(key, checked)
    except ApiError as refused:
        return error_response(refused.status, refused.code, refused.message)
    return response


def _confirm(key: str, checked: Principal | None) -> None:
    if checked is None or checked != principal():
        services().recent_keys.forget(hash_key(key))
        raise ApiError(401, "unauthorized", _REFUSED)


def principal() -> Principal:
    found: Principal = g.principal
    return found


def require(role: Role) -> Principal:
    """The request's principal, if its role allows ``role``; else 403."""
    who = principal()
    if not who.role.allows(role):
        raise ApiError(403, "forbidden", f"this needs a key with the {role.value} role")
    return who


def challenge_header() -> str:
    return _CHALLENGE
