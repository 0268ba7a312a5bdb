"""Health, readiness, metrics and the OpenAPI document: no API key needed."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify

from api.metrics import CONTENT_TYPE
from api.openapi import openapi_document
from api.services import services

blueprint = Blueprint("ops", __name__)


@blueprint.get("/healthz")
def healthz() -> Any:
    """The process is up and serving."""
    return {"status": "ok", "checks": {}}


@blueprint.get("/readyz")
def readyz() -> Any:
    """Postgres and the broker reachable; a missing parse cache only degrades."""
    here = services()
    checks = {
        "database": "ok" if here.run(here.runtime.database.ping()) else "unreachable",
        "broker": "ok" if here.probes.broker() else "unreachable",
    }
    if here.settings.cache_redis_url:
        checks["cache"] = "ok" if here.probes.cache() else "unreachable (ingestion slower)"
    if checks["database"] != "ok" or checks["broker"] != "ok":
        status, code = "unavailable", 503
    elif checks.get("cache", "ok") != "ok":
        status, code = "degraded", 200
    else:
        status, code = "ok", 200
    response = jsonify({"status": status, "checks": checks})
    response.status_code = code
    return response


@blueprint.get("/metrics")
def metrics() -> Response:
    return Response(services().metrics.render(), mimetype=CONTENT_TYPE)


@blueprint.get("/openapi.json")
def openapi() -> Any:
    return openapi_document(current_app.config.get("SERVER_URL", ""))
