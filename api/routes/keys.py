"""The request's own key, and the restricted keys a delegate key issues.

The flow for a product is in docs/restricted-keys.md.
"""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint

from api import convert
from api.auth import principal, read_signer, require
from api.documented import documented, ok
from api.errors import ApiError
from api.routes.common import json_body
from api.schemas.keys import (
    CurrentKeyOut,
    KeyRestrictionOut,
    RestrictedKeyOut,
    RestrictedKeyRequest,
    SigningSecretOut,
)
from api.services import services
from ragsage.core.keys import Principal, Role, Signer
from ragsage.management.restricted_keys import check_grant, filters_claim, grant_of, mint

blueprint = Blueprint("keys", __name__)
_NOT_DELEGATE = "only a delegate key issues restricted keys (ragsage keys create --role delegate)"


@blueprint.get("/v1/key")
@documented("The key this request was made with: namespace, role, principals", ok(CurrentKeyOut))
def current() -> Any:
    who = require(Role.READ)
    restriction = who.restriction
    return convert.dump(
        CurrentKeyOut(
            namespace=who.scope.namespace,
            key_id=who.key_id,
            role=who.role.value,
            principals=sorted(who.scope.principals) if who.scope.principals else None,
            restricted=None
            if restriction is None
            else KeyRestrictionOut(
                expires_at=restriction.expires_at,
                subject=restriction.subject or None,
                filters=filters_claim(restriction.filters) if restriction.filters else None,
            ),
        )
    )


@blueprint.post("/v1/restricted-keys")
@documented(
    "Issue a restricted key for one user (delegate keys)",
    ok(RestrictedKeyOut, status=201),
    body=RestrictedKeyRequest,
)
def issue() -> Any:
    who = _delegate()
    body = json_body(RestrictedKeyRequest)
    here = services()
    grant = grant_of(
        body.principals,
        body.expires_in,
        role=body.role,
        filters=body.filters.to_filters() if body.filters is not None else None,
        subject=body.subject or "",
    )
    # Read afresh, not from the process's memory: a key signed with a secret
    # rotated moments ago would be refused by every other process.
    signer = read_signer((who.scope.namespace, who.key_id))
    if signer is None:
        raise ApiError(401, "unauthorized", "the API key is not valid or has been revoked")
    check_grant(
        grant, signer, max_lifetime=here.settings.restricted_key_max_lifetime, now=time.time()
    )
    key = mint(signer.key_id, signer.namespace, signer.secret, grant)
    response = convert.dump(
        RestrictedKeyOut(
            key=key,
            parent=signer.key_id,
            namespace=signer.namespace,
            principals=sorted(grant.principals),
            role=grant.role.value,
            expires_at=grant.expires_at,
            filters=filters_claim(grant.filters) if grant.filters else None,
            subject=grant.subject or None,
        )
    )
    response.status_code = 201
    response.headers["Cache-Control"] = "no-store"
    return response


@blueprint.post("/v1/key/signing-secret")
@documented(
    "Rotate this delegate key's signing secret (shown once; keys signed with the old one stop)",
    ok(SigningSecretOut),
)
def rotate() -> Any:
    who = _delegate()
    here = services()

    read_at = time.monotonic()
    keys = here.runtime.management.keys
    secret = here.run(keys.rotate_signing_secret(who.scope, who.key_id))
    if secret is None:
        raise ApiError(401, "unauthorized", "the API key is not valid or has been revoked")
    # This process needs no second look at the parent to take the new secret.
    parent = Signer(who.scope.namespace, who.key_id, who.scope.principals, secret)
    here.signers.put((parent.namespace, parent.key_id), parent, read_at)
    response = convert.dump(SigningSecretOut(key_id=who.key_id, signing_secret=secret))
    response.headers["Cache-Control"] = "no-store"
    return response


def _delegate() -> Principal:
    """The request's key, if it is a delegate key itself (not one of its restricted keys)."""
    who = principal()
    if who.role is not Role.DELEGATE or who.restriction is not None:
        raise ApiError(403, "forbidden", _NOT_DELEGATE)
    return who
