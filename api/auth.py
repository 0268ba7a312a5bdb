"""Bearer API keys: every request acts for exactly the key's namespace and role.

Two kinds of credential are accepted.  An API key (``rsk_...``) is looked up
in the database; a restricted key (a JWT signed under a delegate key, see
:mod:`ragsage.management.restricted_keys`) is checked against its parent as
this process last read it, with no lookup of its own.

An unknown credential costs no database statement.  A key made with the
operator's sealing key carries a check (:func:`precheck`), so a forged or
random one is refused before any lookup; a credential the API cannot check
itself (an older key, a restricted key naming a parent this process has not
seen live) is looked up only within its client address's failed-key budget
(``RAGSAGE_RATE_LIMIT_UNKNOWN_KEYS``).  A key this process has accepted
before, and a parent it has seen live, spend none of it, so a flood from
one address never locks a valid key out.

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
import time
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import replace
from typing import Any, TypeVar

from flask import Response, g, request

from api.client_address import client_address
from api.errors import ApiError, error_response
from api.limits import RateLimited, too_many
from api.services import services
from ragsage.core.errors import Forbidden
from ragsage.core.keys import KeyCheck, Principal, Role, Signer, hash_key, precheck
from ragsage.management.restricted_keys import (
    RestrictedKeyRefused,
    SignatureMismatch,
    looks_restricted,
    parent_of,
    signing_input,
    verify,
)
from ragsage.query.options import RetrievalOptions

_CHALLENGE = 'Bearer realm="ragsage"'
_REFUSED = "the API key is not valid or has been revoked"
# Read-only routes whose single loop hop carries the key check (run_checked).
_CHECKED_BESIDE = frozenset({"query.search"})
# The only routes a restricted key with filters may call: those that apply them.
_FILTERS_APPLIED = frozenset(
    {"query.search", "query.query", "query.fetch_chunk", "query.sources", "keys.current"}
)
# A restricted key that fails against a parent read longer ago than this has the
# parent read again first: it may have been created or rotated since.  Tokens that
# fail on purpose cost at most one lookup per parent this often.
_REREAD_AFTER = 0.25
_NO_PARENT = "the restricted key's parent is not a live delegate key (revoked, or never one)"
_NO_SEALING_KEY = (
    "this server accepts no restricted keys: the operator has not set RAGSAGE_SEALING_KEYS, "
    "which delegate keys' signing secrets are sealed with"
)
_T = TypeVar("_T")


def authenticate_request() -> None:
    """Resolve the Authorization header into ``g.principal`` or refuse with 401."""
    key = bearer_token()
    if not key:
        raise ApiError(401, "unauthorized", "an API key is required: Authorization: Bearer rsk_...")
    here = services()
    digest = hash_key(key)
    if looks_restricted(key):
        _accept_restricted(key, digest)
        return
    seen = here.recent_keys.get(digest)
    # A key this process accepted passed the check then, against the same sealer.
    checked = precheck(key, here.sealer) if seen is None else None
    if checked is KeyCheck.REFUSED:
        raise ApiError(401, "unauthorized", _REFUSED)
    # A known key's search goes out before the key is checked again (run_checked).
    beside = seen if request.endpoint in _CHECKED_BESIDE else None
    if beside is not None and here.limits.may_count_beside(
        request.endpoint, digest, beside.scope.namespace
    ):
        g.principal, g.unchecked_key, g.uncounted = beside, key, digest
        return
    refusal = here.limits.check_key(
        request.endpoint, digest, seen.scope.namespace if seen is not None else None
    )
    if refusal is not None:
        raise RateLimited(refusal)
    if beside is not None:
        g.principal, g.unchecked_key = beside, key
        return
    if checked is KeyCheck.UNCHECKED:
        _spend_unknown_key_budget()

    principal = here.run(here.runtime.management.keys.authenticate(key))
    if principal is None:
        here.recent_keys.forget(digest)
        raise ApiError(401, "unauthorized", _REFUSED)
    here.recent_keys.remember(digest, principal)
    g.principal = principal


def bearer_token() -> str:
    """The credential of the request's ``Authorization: Bearer`` header; empty if none."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _accept_restricted(token: str, whole: str) -> None:
    """Check a restricted key, then count it as a key of its own under the rate limits.

    ``whole`` is the digest of the whole token, signature included (a copy with
    another signature is another token); the rate limits count the signed part.
    """
    here = services()
    digest = hash_key(signing_input(token))
    counted = False
    try:
        who = _checked_lately(whole)
        if who is None:
            parent = parent_of(token)
            if here.signers.get(parent) is None:
                # Postgres is about to be asked for the parent: count the key first,
                # as an API key is counted before its lookup.
                refusal = here.limits.check_key(request.endpoint, digest, None)
                if refusal is not None:
                    raise RateLimited(refusal)
                counted = True
                if not here.signers.seen_live(parent):
                    _spend_unknown_key_budget()
            who = _verified(token, parent, whole)
    except RestrictedKeyRefused as refused:
        raise ApiError(401, "unauthorized", str(refused)) from None
    except Forbidden as refused:
        raise ApiError(403, "forbidden", str(refused)) from None
    namespace = who.scope.namespace
    if counted:
        g.principal = who
        return
    if request.endpoint in _CHECKED_BESIDE and here.limits.may_count_beside(
        request.endpoint, digest, namespace
    ):
        g.principal, g.uncounted = who, digest
        return
    refusal = here.limits.check_key(request.endpoint, digest, namespace)
    if refusal is not None:
        raise RateLimited(refusal)
    g.principal = who


def _checked_lately(whole: str) -> Principal | None:
    """The key's principal if it passed against the reading of its parent still held."""
    here = services()
    remembered = here.verified.get(whole)
    if remembered is None:
        return None
    signer, who = remembered
    known = here.signers.get((signer.namespace, signer.key_id))
    return who if known is not None and known[0] is signer else None


def _verified(token: str, parent: tuple[str, str], digest: str) -> Principal:
    here = services()
    known = here.signers.get(parent)
    if known is None:
        known = (read_signer(parent), 0.0)
    signer, age = known
    try:
        if signer is None:
            raise SignatureMismatch(_NO_PARENT)
        return _checked(token, signer, digest)
    except SignatureMismatch:
        if age < _REREAD_AFTER or signer is None:
            raise
        # Rotated since this process read it, or forged: only the budget tells which
        # of the two a fresh read may be spent on.
        if services().limits.check_unknown_key(_address()) is not None:
            raise
    # Created or rotated since this process read it: once more, fresh.
    signer = read_signer(parent)
    if signer is None:
        raise RestrictedKeyRefused(_NO_PARENT)
    return _checked(token, signer, digest)


def _checked(token: str, signer: Signer, digest: str) -> Principal:
    here = services()
    who = verify(token, signer, max_lifetime=here.settings.restricted_key_max_lifetime)
    here.verified.remember(digest, signer, who)
    return who


def _address() -> str:
    return client_address(services().settings.trusted_proxies)


def _spend_unknown_key_budget() -> None:
    """One lookup of a credential the API cannot check itself, or 429 once none are left."""
    refusal = services().limits.check_unknown_key(_address())
    if refusal is not None:
        raise RateLimited(refusal)


def read_signer(parent: tuple[str, str]) -> Signer | None:
    """The delegate key ``parent`` (namespace, id) as Postgres has it now, remembered here."""
    here = services()
    read_at = time.monotonic()
    if here.sealer is None:
        raise RestrictedKeyRefused(_NO_SEALING_KEY)
    signer = here.run(here.runtime.management.keys.signer(*parent))
    here.signers.put(parent, signer, read_at)
    return signer


def run_checked(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """``services().run(coroutine)``, with the request's pending key check beside it.

    Whatever ``coroutine`` returns or raises reaches the caller only after
    the key has been confirmed to still name the same principal; otherwise
    the request is refused with 401.
    """
    here = services()
    key: str | None = g.pop("unchecked_key", None)
    if key is None:
        counted: str | None = g.pop("uncounted", None)
        return here.run(coroutine) if counted is None else _counted_beside(coroutine, counted)
    checking = key

    async def both() -> tuple[Principal | None, _T | Exception]:
        check = asyncio.ensure_future(here.runtime.management.keys.authenticate(checking))
        try:
            outcome: _T | Exception = await coroutine
        except Exception as exc:  # noqa: BLE001 - held until the key is confirmed
            outcome = exc
        except BaseException:
            check.cancel()
            raise
        return await check, outcome

    uncounted: str | None = g.pop("uncounted", None)
    if uncounted is None:
        checked, outcome = here.run(both())
    else:
        try:
            checked, outcome = _counted_beside(both(), uncounted)
        except RateLimited:
            # A namespace's 429 says something of its traffic: the key is confirmed
            # first (settle_unchecked), so a revoked one still gets only a 401.
            g.unchecked_key = key
            raise
    _confirm(key, checked)
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def _counted_beside(work: Coroutine[Any, Any, _T], key_digest: str) -> _T:
    """``work``'s result, once this request's rate limits, counted while it ran, allow it."""
    here = services()
    running = here.loop.submit(work)
    try:
        refusal = here.limits.check_both(request.endpoint, key_digest, principal().scope.namespace)
        if refusal is not None:
            # The search is left to end and its result dropped: cancelled mid-read, it
            # could still be closing its connection when the process stops.
            with suppress(Exception):
                running.result(here.request_timeout)
            raise RateLimited(refusal)
        return running.result(here.request_timeout)
    except BaseException:
        running.cancel()
        raise


def settle_unchecked(response: Response) -> Response:
    """Check a key still pending when a response was made without :func:`run_checked`.

    A request refused before its search ran (a malformed body, say) must not
    tell a revoked key's holder more than a 401 would.
    """
    here = services()
    uncounted: str | None = g.pop("uncounted", None)
    if uncounted is not None:
        refusal = here.limits.check_both(request.endpoint, uncounted, principal().scope.namespace)
        if refusal is not None:
            response = too_many(refusal)
    key: str | None = g.pop("unchecked_key", None)
    if key is None:
        return response
    checked = here.run(here.runtime.management.keys.authenticate(key))
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
    """The request's principal, if its role allows ``role``; else 403.

    A restricted key carrying filters is refused wherever they are not
    applied, so it reads nothing beyond them.
    """
    who = principal()
    if not who.role.allows(role):
        raise ApiError(403, "forbidden", f"this needs a key with the {role.value} role")
    if who.filters is not None and request.endpoint not in _FILTERS_APPLIED:
        raise ApiError(
            403,
            "forbidden",
            "a restricted key with filters may only search, answer, list sources and open chunks",
        )
    return who


def narrowed(who: Principal, options: RetrievalOptions) -> RetrievalOptions:
    """``options`` with the filters of ``who``'s restricted key applied on top of its own."""
    if who.filters is None:
        return options
    return replace(options, filters=who.filters.narrowing(options.filters))


def challenge_header() -> str:
    return _CHALLENGE
