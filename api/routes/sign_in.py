"""Exchanging a one-time sign-in code for the key it stands for (the web page's links).

The route needs no key (it is how the page gets one).  Opening a code is a
MAC check in this process, so a forged or random one is refused before any
Redis or database work; the making and opening live in
:mod:`ragsage.management.sign_in`, which ``ragsage keys sign-in-link`` shares.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from api import convert
from api.documented import Reply, documented, ok
from api.errors import ApiError, unavailable
from api.routes.common import json_body
from api.schemas.common import ErrorResponse
from api.schemas.sign_in import SignInOut, SignInRequest
from api.services import services
from ragsage.management.sign_in import SignInRefused, SignInUnavailable

blueprint = Blueprint("sign_in", __name__)
# 401: no code this deployment made; 410: a real code, expired or used already.
_STATUS = {"invalid": 401, "expired": 410, "used": 410}


@blueprint.post("/v1/sign-in")
@documented(
    "Exchange a one-time sign-in code (from a sign-in link) for its key",
    ok(SignInOut),
    Reply(410, "the code expired, or was used already", ErrorResponse),
    body=SignInRequest,
    secured=False,
    errors=(400, 401, 413, 415, 422, 503),
)
def exchange() -> Any:
    body = json_body(SignInRequest)
    here = services()
    if here.sign_in is None:
        raise ApiError(
            503,
            "misconfigured",
            "sign-in codes need the operator's sealing keys (RAGSAGE_SEALING_KEYS)",
        )
    codes, used = here.sign_in
    try:
        key = codes.exchange(body.code, used)
    except SignInRefused as refused:
        raise ApiError(
            _STATUS[refused.reason], f"sign_in_code_{refused.reason}", str(refused)
        ) from None
    except SignInUnavailable as away:
        return unavailable(str(away))
    response = convert.dump(SignInOut(key=key))
    response.headers["Cache-Control"] = "no-store"
    return response
