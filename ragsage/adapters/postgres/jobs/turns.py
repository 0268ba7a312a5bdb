"""Whose turn it is: the next job a free worker slot runs, chosen across namespaces.

Choosing crosses namespaces, so it goes through the privileged
``ragsage_next_job`` function (``sql/functions/next_job.sql`` says the order);
the job is then claimed in its own namespace's scoped session, as any job is.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


async def next_job(
    system: AsyncSession, default_slots: int, skip: Sequence[UUID] = ()
) -> tuple[str, UUID] | None:
    """(namespace, job id) of the job whose turn it is, or None when nothing can run now.

    ``default_slots`` is the share of worker slots of a namespace without its
    own (0: no cap); ``skip`` lists jobs another worker claimed first.
    """
    row = (
        await system.execute(
            text("SELECT namespace, job_id FROM ragsage_next_job(:slots, :skip)"),
            {"slots": default_slots, "skip": list(skip)},
        )
    ).first()
    return None if row is None else (str(row[0]), row[1])
