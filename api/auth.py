"""Bearer API keys: every request acts for exactly the key's namespace and role."""

from __future__ import annotations

from flask import g, request

from api.errors import ApiError
from api.services import services
from ragsage.keys import Principal, Role, authenticate_on

_CHALLENGE = 'Bearer realm="ragsage"'


def authenticate_request() -> None:
    """Resolve the Authorization header into ``g.principal`` or refuse with 401."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "an API key is required: Authorization: Bearer rsk_...")
    here = services()

    async def lookup() -> Principal | None:
        return await authenticate_on(here.runtime.database, key.strip())

    principal = here.run(lookup())
    if principal is None:
        raise ApiError(401, "unauthorized", "the API key is not valid or has been revoked")
    g.principal = principal


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
