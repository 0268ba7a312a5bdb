"""What the key's namespace holds, what it may hold, and what its limits refused (admin)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from api import convert
from api.auth import require
from api.documented import documented, ok
from api.schemas.usage import QuotasOut, UsageOut
from api.services import services
from ragsage.core.keys import Role

blueprint = Blueprint("usage", __name__)


@blueprint.get("/v1/usage")
@documented("The namespace's usage, quotas, rate limits and refusals (admin)", ok(UsageOut))
def usage() -> Any:
    who = require(Role.ADMIN)
    here = services()
    usage = here.runtime.management.usage
    found = here.run(usage.of(who.scope))
    limits = found.quotas
    return convert.dump(
        UsageOut(
            namespace=who.scope.namespace,
            **found.held,
            quotas=QuotasOut(
                documents=limits.documents,
                stored_bytes=limits.bytes,
                chunks=limits.chunks,
                queued_jobs=limits.queued_jobs,
            ),
            job_slots=usage.job_slots(found),
            rate_limits={limit.name: str(limit.item) for limit in here.limits.limits},
            refused=here.limits.refusals(who.scope.namespace),
        )
    )
