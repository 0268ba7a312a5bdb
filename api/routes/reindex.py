"""Re-indexing the key's namespace into another embedding model (admin keys only)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from api import convert
from api.auth import require
from api.routes.common import json_body
from api.schemas import (
    ActiveGeneration,
    DroppedGenerations,
    GenerationOut,
    ReindexRequest,
    ReindexStarted,
    ReindexStatus,
    RollbackRequest,
)
from api.services import services
from ragsage.adapters.postgres.generations import Generation
from ragsage.adapters.postgres.keys import Role

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
def rollback() -> Any:
    who = require(Role.ADMIN)
    body = json_body(RollbackRequest)
    return _active(services().enqueuer.rollback(who.scope.namespace, force=body.force))


@blueprint.post("/v1/reindex/drop-previous")
def drop_previous() -> Any:
    who = require(Role.ADMIN)
    freed = services().enqueuer.drop_previous(who.scope.namespace)
    return convert.dump(DroppedGenerations(freed_chunks=freed))


@blueprint.post("/v1/reindex/<int:generation>/activate")
def activate(generation: int) -> Any:
    """Switch to a held, complete generation: what a gate does once it approves."""
    who = require(Role.ADMIN)
    return _active(services().enqueuer.activate_held(who.scope.namespace, generation))


@blueprint.get("/v1/reindex")
def status() -> Any:
    who = require(Role.ADMIN)
    rows = services().enqueuer.reindex_status(who.scope.namespace)
    return convert.dump(ReindexStatus(generations=[GenerationOut(**row) for row in rows]))
