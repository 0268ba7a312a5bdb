"""Re-indexing the key's namespace into another embedding model (admin keys only)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from api import convert
from api.auth import require
from api.documented import documented, ok
from api.routes.common import json_body
from api.schemas.reindex import (
    ActiveGeneration,
    DroppedGenerations,
    GenerationOut,
    ReindexRequest,
    ReindexStarted,
    ReindexStatus,
    RollbackRequest,
)
from api.services import services
from ragsage.core.generations import Generation
from ragsage.core.keys import Role

blueprint = Blueprint("reindex", __name__)


@blueprint.post("/v1/reindex")
@documented(
    "Re-index the namespace into another embedding model (admin)",
    ok(ReindexStarted, 202),
    body=ReindexRequest,
    errors=(400, 401, 403, 409, 413, 415, 422, 503),
)
def start() -> Any:
    who = require(Role.ADMIN)
    body = json_body(ReindexRequest)
    here = services()
    generation, queued = here.enqueuer.reindex.start(
        who.scope.namespace,
        embedder=body.embedder or here.settings.embedder,
        model=body.embedding_model,
        dim=body.dim,
        held=body.held,
    )
    return convert.dump(ReindexStarted(generation=generation, queued=queued)), 202


def _active(generation: Generation) -> Any:
    return convert.dump(
        ActiveGeneration(
            generation=generation.id,
            embedder=generation.embedder,
            embedding_model=generation.embedding_model,
            embedding_dim=generation.embedding_dim,
        )
    )


@blueprint.post("/v1/reindex/rollback")
@documented(
    "Undo the last switch, or abandon a building re-index (admin); refused with "
    "the count of documents the previous generation lacks, unless forced",
    ok(ActiveGeneration),
    body=RollbackRequest,
    errors=(400, 401, 403, 409, 413, 415, 422, 503),
)
def rollback() -> Any:
    who = require(Role.ADMIN)
    body = json_body(RollbackRequest)
    return _active(services().enqueuer.reindex.rollback(who.scope.namespace, force=body.force))


@blueprint.post("/v1/reindex/drop-previous")
@documented(
    "Delete the retired generations and their vectors (admin)",
    ok(DroppedGenerations),
    errors=(401, 403, 503),
)
def drop_previous() -> Any:
    who = require(Role.ADMIN)
    freed = services().enqueuer.reindex.drop_previous(who.scope.namespace)
    return convert.dump(DroppedGenerations(freed_chunks=freed))


@blueprint.post("/v1/reindex/<int:generation>/activate")
@documented(
    "Switch to a held, complete generation: a gate's approval (admin)",
    ok(ActiveGeneration),
    errors=(401, 403, 404, 409, 503),
)
def activate(generation: int) -> Any:
    """Switch to a held, complete generation: what a gate does once it approves."""
    who = require(Role.ADMIN)
    return _active(services().enqueuer.reindex.activate_held(who.scope.namespace, generation))


@blueprint.get("/v1/reindex")
@documented("Embedding generations and re-index progress (admin)", ok(ReindexStatus))
def status() -> Any:
    who = require(Role.ADMIN)
    rows = services().enqueuer.reindex.status(who.scope.namespace)
    return convert.dump(ReindexStatus(generations=[GenerationOut(**row) for row in rows]))
