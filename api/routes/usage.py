"""What the key's namespace holds, what it may hold, and what its limits refused (admin)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from api import convert, schemas
from api.auth import require
from api.documented import documented, ok
from api.schemas import QuotasOut, UsageOut
from api.services import services
from ragsage.adapters.postgres import quotas
from ragsage.adapters.postgres.namespaces import own_overrides
from ragsage.core.keys import Role

blueprint = Blueprint("usage", __name__)


@blueprint.get("/v1/usage")
@documented("The namespace's usage, quotas, rate limits and refusals (admin)", ok(schemas.UsageOut))
def usage() -> Any:
    who = require(Role.ADMIN)
    here = services()
    settings = here.settings

    async def read() -> tuple[dict[str, int], dict[str, int | None], Any]:
        async with here.runtime.database.session(who.scope) as session:
            held = await quotas.usage(session)
            overrides = await own_overrides(session)
            limits = await quotas.namespace_quotas(session, settings.quotas())
        return held, overrides, limits

    held, overrides, limits = here.run(read())
    slots = overrides["job_slots"]
    return convert.dump(
        UsageOut(
            namespace=who.scope.namespace,
            **held,
            quotas=QuotasOut(
                documents=limits.documents,
                stored_bytes=limits.bytes,
                chunks=limits.chunks,
                queued_jobs=limits.queued_jobs,
            ),
            job_slots=settings.job_namespace_slots if slots is None else slots,
            rate_limits={limit.name: str(limit.item) for limit in here.limits.limits},
            refused=here.limits.refusals(who.scope.namespace),
        )
    )
