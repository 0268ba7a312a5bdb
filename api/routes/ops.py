"""Health, readiness, metrics and the OpenAPI document: no API key (metrics may want a token)."""

from __future__ import annotations

import hmac
from typing import Any

from flask import Blueprint, Response, current_app, jsonify

from api.auth import bearer_token
from api.documented import Reply, documented, ok
from api.errors import error_response
from api.metrics import CONTENT_TYPE
from api.openapi import openapi_document
from api.schemas.ops import Health
from api.services import services

blueprint = Blueprint("ops", __name__)


@blueprint.get("/healthz")
@documented("Liveness", ok(Health), secured=False, errors=())
def healthz() -> Any:
    """The process is up and serving."""
    return {"status": "ok", "checks": {}}


@blueprint.get("/readyz")
@documented(
    "Readiness: database and broker",
    ok(Health),
    Reply(503, "not ready", Health),
    secured=False,
    errors=(),
)
def readyz() -> Any:
    """Postgres and the broker reachable; a missing parse cache or replica only degrades."""
    here = services()
    checks = {
        "database": "ok" if here.run(here.runtime.database.ping()) else "unreachable",
        "broker": "ok" if here.probes.broker() else "unreachable",
    }
    if here.settings.cache_redis_url:
        checks["cache"] = "ok" if here.probes.cache() else "unreachable (ingestion slower)"
    replicas_out = False
    for replica in here.probes.replicas():
        lag = replica["lag_seconds"]
        if replica["up"]:
            checks[replica["name"]] = f"ok (lag {lag:.1f} s)"
        else:
            checks[replica["name"]] = (
                f"out of rotation ({replica['error']}): reads go to the primary"
            )
            replicas_out = True
    if checks["database"] != "ok" or checks["broker"] != "ok":
        status, code = "unavailable", 503
    elif checks.get("cache", "ok") != "ok" or replicas_out:
        status, code = "degraded", 200
    else:
        status, code = "ok", 200
    response = jsonify({"status": status, "checks": checks})
    response.status_code = code
    return response


@blueprint.get("/metrics")
@documented(
    "Prometheus metrics of every API worker",
    Reply(200, "the metrics", also={"text/plain": {"schema": {"type": "string"}}}),
    secured=False,
    # Only when the operator set RAGSAGE_METRICS_TOKEN and the request lacks it.
    errors=(401,),
)
def metrics() -> Response:
    here = services()
    wanted = here.settings.metrics_token
    if wanted:
        if not hmac.compare_digest(bearer_token().encode("utf-8"), wanted.encode("utf-8")):
            return error_response(
                401,
                "unauthorized",
                "the metrics need the operator's token: "
                "Authorization: Bearer <RAGSAGE_METRICS_TOKEN>",
            )
    return Response(here.metrics.render(), mimetype=CONTENT_TYPE)


@blueprint.get("/openapi.json")
@documented(
    "This document",
    Reply(200, "the OpenAPI document", also={"application/json": {"schema": {"type": "object"}}}),
    secured=False,
    errors=(),
)
def openapi() -> Any:
    # Built once per app: the routes and models do not change while it serves.
    if "openapi" not in current_app.extensions:
        server = current_app.config.get("SERVER_URL", "")
        current_app.extensions["openapi"] = openapi_document(current_app, server)
    return current_app.extensions["openapi"]
