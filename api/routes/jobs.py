"""Ingestion jobs: state, retry and cancel."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from api import convert
from api.auth import require
from api.documented import cursor, documented, ok, query_int, query_text
from api.errors import ApiError
from api.routes.common import int_arg
from api.schemas.jobs import JobList, JobOut
from api.services import services
from ragsage.core.jobs import Job, JobState
from ragsage.core.keys import Role

blueprint = Blueprint("jobs", __name__)
JOB_STATES = {"type": "string", "enum": [state.value for state in JobState]}


def _out(job: Job) -> JobOut:
    return JobOut(**job.to_dict())


@blueprint.get("/v1/jobs")
@documented(
    "Ingestion jobs, newest first",
    ok(JobList),
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
    here = services()
    found = here.run(
        here.runtime.management.jobs.page(
            who.scope, limit=limit, state=state, before=request.args.get("cursor") or None
        )
    )
    return convert.dump(JobList(jobs=[_out(j) for j in found.items], next_cursor=found.next_cursor))


@blueprint.get("/v1/jobs/<job_id>")
@documented("One job", ok(JobOut))
def get_one(job_id: str) -> Any:
    who = require(Role.READ)
    here = services()
    return convert.dump(_out(here.run(here.runtime.management.jobs.get(who.scope, job_id))))


@blueprint.post("/v1/jobs/<job_id>/cancel")
@documented("Cancel a queued or running job", ok(JobOut), errors=(400, 401, 403, 404, 409, 503))
def cancel(job_id: str) -> Any:
    who = require(Role.WRITE)
    here = services()
    return convert.dump(_out(here.run(here.runtime.management.jobs.cancel(who.scope, job_id))))


@blueprint.post("/v1/jobs/<job_id>/retry")
@documented(
    "Retry a failed or cancelled job",
    ok(JobOut, 202),
    errors=(400, 401, 403, 404, 409, 503),
)
def retry(job_id: str) -> Any:
    who = require(Role.WRITE)
    here = services()
    job = here.run(here.runtime.management.jobs.retry(who.scope, job_id))
    here.enqueuer.send(who.scope.namespace, job.id)
    return convert.dump(_out(job)), 202
