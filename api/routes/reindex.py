"""Re-indexing the key's namespace into another embedding model (admin keys only)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from api import convert
from api.auth import require
from api.routes.common import json_body
from api.schemas import GenerationOut, ReindexRequest, ReindexStarted, ReindexStatus
from api.services import services
from ragsage.keys import Role

blueprint = Blueprint("reindex", __name__)


@blueprint.post("/v1/reindex")
def start() -> Any:
    who = require(Role.ADMIN)
    body = json_body(ReindexRequest)
    here = services()
    generation, queued = here.enqueuer.start_reindex(
        who.scope.namespace,
        embedder=body.embedder or here.settings.embedder,
        model=body.embedding_model,
        dim=body.dim,
    )
    return convert.dump(ReindexStarted(generation=generation, queued=queued)), 202


@blueprint.get("/v1/reindex")
def status() -> Any:
    who = require(Role.ADMIN)
    rows = services().enqueuer.reindex_status(who.scope.namespace)
    return convert.dump(ReindexStatus(generations=[GenerationOut(**row) for row in rows]))
