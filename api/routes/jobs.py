"""Ingestion jobs: state, retry and cancel."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from flask import Blueprint, request
from sqlalchemy.ext.asyncio import AsyncSession

from api import convert, schemas
from api.auth import require
from api.documented import cursor, documented, ok, query_int, query_text
from api.errors import ApiError
from api.routes.common import int_arg
from api.schemas import JobList, JobOut
from api.services import services
from ragsage.adapters.postgres.jobs import documents, store
from ragsage.adapters.postgres.sessions import ScopedReads
from ragsage.core.jobs import Job, JobState
from ragsage.core.keys import Role

blueprint = Blueprint("jobs", __name__)
JOB_STATES = {"type": "string", "enum": [state.value for state in JobState]}


def _job_id(raw: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise ApiError(404, "not_found", f"no job {raw!r}") from None


def _out(job: Job) -> JobOut:
    return JobOut(**job.to_dict())


@blueprint.get("/v1/jobs")
@documented(
    "Ingestion jobs, newest first",
    ok(schemas.JobList),
    query=(query_int("limit", 1, 200), cursor(), query_text("state", JOB_STATES)),
)
def list_all() -> Any:
    who = require(Role.READ)
    limit = int_arg("limit", 50, 1, 200)
    state_arg = request.args.get("state") or None
    try:
        state = JobState(state_arg) if state_arg else None
    except ValueError:
        allowed = ", ".join(s.value for s in JobState)
        raise ApiError(400, "invalid_request", f"state must be one of {allowed}") from None
    cursor = _job_id(request.args["cursor"]) if request.args.get("cursor") else None
    here = services()

    # On the primary, never a replica: a client reads its own upload at once and
    # never sees a job go back in time (docs/scaling.md, read replicas).
    reads = ScopedReads(here.runtime.database, who.scope)
    found = here.run(store.list_jobs(reads, state=state, limit=limit + 1, before=cursor))
    page, more = found[:limit], len(found) > limit
    return convert.dump(
        JobList(jobs=[_out(j) for j in page], next_cursor=str(page[-1].id) if more else None)
    )


@blueprint.get("/v1/jobs/<job_id>")
@documented("One job", ok(schemas.JobOut))
def get_one(job_id: str) -> Any:
    who = require(Role.READ)
    identifier = _job_id(job_id)
    here = services()

    reads = ScopedReads(here.runtime.database, who.scope)
    job = here.run(store.get_job(reads, identifier))
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id!r}")
    return convert.dump(_out(job))


def _transition(
    job_id: str,
    change: Callable[[AsyncSession, UUID], Awaitable[bool]],
    refusal: Callable[[Job], str],
) -> Job:
    """Apply ``change`` to a job of the caller's namespace: 404 if absent, 409 if refused."""
    who = require(Role.WRITE)
    identifier = _job_id(job_id)
    here = services()

    async def act() -> Job | None:
        async with here.runtime.database.session(who.scope) as session:
            job = await store.get_job(session, identifier)
            if job is None:
                return None
            if not await change(session, identifier):
                raise ApiError(409, "conflict", refusal(job))
            return await store.get_job(session, identifier)

    job = here.run(act())
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id!r}")
    return job


@blueprint.post("/v1/jobs/<job_id>/cancel")
@documented(
    "Cancel a queued or running job", ok(schemas.JobOut), errors=(400, 401, 403, 404, 409, 503)
)
def cancel(job_id: str) -> Any:
    job = _transition(
        job_id, documents.cancel_job, lambda job: f"job {job_id} is already {job.state.value}"
    )
    return convert.dump(_out(job))


@blueprint.post("/v1/jobs/<job_id>/retry")
@documented(
    "Retry a failed or cancelled job",
    ok(schemas.JobOut, 202),
    errors=(400, 401, 403, 404, 409, 503),
)
def retry(job_id: str) -> Any:
    job = _transition(
        job_id,
        documents.retry_job,
        lambda job: (
            f"job {job_id} is {job.state.value}; only failed or cancelled jobs "
            "whose bytes are still stored can be retried"
        ),
    )
    services().enqueuer.send(require(Role.WRITE).scope.namespace, job.id)
    return convert.dump(_out(job)), 202
