"""Re-indexing after an embedding-model change, the way a database changes a schema.

A *building* generation is created beside the *active* one; one ``reindex`` job
per document re-chunks and re-embeds it from the pages resolved at ingestion
(no re-parse, no vision call) into the building generation, while queries keep
being served from the active one.  When every document is done, one
transaction retires the old generation and activates the new; the old rows stay
until ``drop_previous`` so ``rollback`` can switch back instantly.  Uploads that
arrive meanwhile are ingested into the active generation and get a reindex job
for the building one, so no document is missing after the switch.

A generation started *held* (``ragsage reindex --gate``) does not switch by
itself when complete: it waits, still building, until :func:`activate_held`
is called after an evaluation has been passed (or overruled).
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.generations import live_generations
from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.postgres.migrations import STATISTICS_TABLES
from ragsage.adapters.postgres.replicas import replicas_must_replay
from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.errors import Conflict
from ragsage.core.generations import Generation
from ragsage.core.scopes import Scope


async def start(
    session: AsyncSession,
    scope: Scope,
    *,
    embedder: str,
    model: str,
    dim: int,
    held: bool = False,
) -> tuple[Generation, list[UUID]]:
    """Create (or resume) the building generation and queue a job per document.

    Returns the generation and the ids of the jobs to send once this commits.
    Resuming the same model re-queues only documents without a finished job.
    With ``held`` the generation waits for :func:`activate_held` when complete;
    resuming without it releases a held one, switching now if it is complete.
    """
    live = await live_generations(session)
    active = next((g for g in live if g.state == "active"), None)
    building = next((g for g in live if g.state == "building"), None)
    if active is None:
        raise Conflict(f"namespace {scope.namespace!r} has nothing to re-index yet")
    if (active.embedding_model, active.embedding_dim) == (model, dim):
        raise Conflict(f"namespace {scope.namespace!r} is already indexed with {model}")
    if building is not None and (building.embedding_model, building.embedding_dim) != (model, dim):
        raise Conflict(
            f"a re-index to {building.embedding_model} is already running in "
            f"{scope.namespace!r}; wait for it, or roll it back first"
        )
    if building is None:
        generation_id = await session.scalar(
            text(
                "INSERT INTO ragsage_generations (namespace, id, embedding_model, embedding_dim, "
                "state, embedder) SELECT :namespace, coalesce(max(id), 0) + 1, :model, :dim, "
                "'building', :embedder FROM ragsage_generations WHERE namespace = :namespace "
                "RETURNING id"
            ),
            {"namespace": scope.namespace, "model": model, "dim": dim, "embedder": embedder},
        )
        building = Generation(int(generation_id or 0), model, dim, "building", embedder)
    await session.execute(
        text(
            "UPDATE ragsage_generations SET held = :held WHERE namespace = :namespace AND id = :id"
        ),
        {"namespace": scope.namespace, "held": held, "id": building.id},
    )
    documents = await session.execute(
        text(
            "SELECT d.id, d.content_hash, d.filename, d.media_type, d.metadata "
            "FROM ragsage_documents d WHERE d.namespace = :namespace AND d.status = 'ready' "
            "AND NOT EXISTS (SELECT 1 FROM ragsage_jobs j WHERE j.namespace = d.namespace "
            "AND j.document_id = d.id AND j.kind = 'reindex' "
            "AND j.generation = :generation AND j.content_hash = d.content_hash "
            "AND j.state IN ('queued', 'running', 'succeeded')) ORDER BY d.id"
        ),
        {"namespace": scope.namespace, "generation": building.id},
    )
    job_ids = []
    for document_id, content_hash, filename, media_type, metadata in documents:
        job_ids.append(
            await queue_document(
                session,
                scope,
                building,
                document_id=document_id,
                content_hash=content_hash,
                filename=filename or document_id,
                media_type=media_type,
                metadata=metadata or {},
            )
        )
    if not job_ids and not held:
        # Nothing left to queue means no job will finish and call try_activate.
        await try_activate(session, building.id)
    return building, job_ids


async def queue_document(
    session: AsyncSession,
    scope: Scope,
    generation: Generation,
    *,
    document_id: str,
    content_hash: str,
    filename: str,
    media_type: str | None,
    metadata: dict[str, Any],
) -> UUID:
    """Insert one re-index job of a document version for ``generation``."""
    job_id = uuid.uuid4()
    await store.insert_job(
        session,
        job_id=job_id,
        namespace=scope.namespace,
        document_id=document_id,
        kind="reindex",
        content_hash=content_hash,
        filename=filename,
        media_type=media_type,
        metadata=metadata,
        generation=generation.id,
    )
    return job_id


async def queue_for_building(
    session: AsyncSession,
    scope: Scope,
    *,
    document_id: str,
    content_hash: str,
    filename: str,
    media_type: str | None,
    metadata: dict[str, Any],
) -> UUID | None:
    """Queue a just-written document version for the building generation, if any.

    A re-index switches only once every ready document is in its generation, so
    every write during one needs this job too, or the switch waits forever.
    """
    building = await building_generation(session)
    if building is None:
        return None
    return await queue_document(
        session,
        scope,
        building,
        document_id=document_id,
        content_hash=content_hash,
        filename=filename,
        media_type=media_type,
        metadata=metadata,
    )


async def building_generation(session: AsyncSession) -> Generation | None:
    return next((g for g in await live_generations(session) if g.state == "building"), None)


async def try_activate(session: AsyncSession, generation_id: int) -> bool:
    """Switch to the building generation if every ready document is in it.

    One transaction retires the active generation and activates this one, so a
    query sees either the whole old index or the whole new one.  Generation rows
    are locked first, so two workers finishing the last jobs at once switch once.
    A held generation is left building: its switch waits for :func:`activate_held`.
    """
    states = await _lock_generations(session)
    if states.get(generation_id) != ("building", False):
        return False
    # Every job but the last stops here, on the re-index jobs' own index: counting
    # the documents each time made a re-index quadratic in the namespace's size.
    # The lock above orders the last two jobs, so the later one sees the other's
    # result committed and switches.
    if await _jobs_open(session, generation_id):
        return False
    if await missing_documents(session, generation_id):
        return False
    await _switch(session, generation_id)
    return True


async def activate_held(session: AsyncSession, scope: Scope, generation_id: int) -> None:
    """Switch to a complete building generation now, held or not (a gate's decision)."""
    states = await _lock_generations(session)
    state, _ = states.get(generation_id, (None, False))
    if state != "building":
        raise Conflict(
            f"generation {generation_id} of {scope.namespace!r} is not building "
            f"(it is {state or 'gone'}); nothing to activate"
        )
    missing = await missing_documents(session, generation_id)
    if missing:
        raise Conflict(
            f"generation {generation_id} of {scope.namespace!r} still lacks {missing} "
            "documents; it cannot be activated yet"
        )
    await _switch(session, generation_id)


async def missing_documents(session: AsyncSession, generation_id: int) -> int:
    """How many ready documents have no succeeded re-index job for ``generation_id``."""
    missing = await session.scalar(
        text(
            "SELECT count(*) FROM ragsage_documents d WHERE d.namespace = :namespace "
            "AND d.status = 'ready' AND NOT EXISTS (SELECT 1 FROM ragsage_jobs j "
            "WHERE j.namespace = d.namespace AND j.document_id = d.id AND j.kind = 'reindex' "
            "AND j.generation = :generation AND j.content_hash = d.content_hash "
            "AND j.state = 'succeeded')"
        ),
        {"namespace": namespace_of(session), "generation": generation_id},
    )
    return int(missing or 0)


async def _jobs_open(session: AsyncSession, generation_id: int) -> bool:
    """True while a re-index job of the generation is still queued or running."""
    found = await session.scalar(
        text(
            "SELECT EXISTS (SELECT 1 FROM ragsage_jobs WHERE namespace = :namespace "
            "AND kind = 'reindex' AND generation = :generation "
            "AND state IN ('queued', 'running'))"
        ),
        {"namespace": namespace_of(session), "generation": generation_id},
    )
    return bool(found)


async def _lock_generations(session: AsyncSession) -> dict[int, tuple[str, bool]]:
    rows = await session.execute(
        text(
            "SELECT id, state, held FROM ragsage_generations WHERE namespace = :namespace "
            "ORDER BY id FOR UPDATE"
        ),
        {"namespace": namespace_of(session)},
    )
    return {int(row[0]): (str(row[1]), bool(row[2])) for row in rows}


async def _switch(session: AsyncSession, generation_id: int) -> None:
    """Retire the active generation and activate ``generation_id`` in its place.

    The same statements serve a finished re-index (a building generation, maybe
    held) and a rollback (a retired one): activation clears both marks.
    """
    namespace = namespace_of(session)
    replicas_must_replay(session)  # searches must not keep reading the old generation
    await session.execute(
        text(
            "UPDATE ragsage_generations SET state = 'retired', retired_at = now() "
            "WHERE namespace = :namespace AND state = 'active'"
        ),
        {"namespace": namespace},
    )
    await session.execute(
        text(
            "UPDATE ragsage_generations SET state = 'active', activated_at = now(), "
            "held = false, retired_at = NULL WHERE namespace = :namespace AND id = :id"
        ),
        {"namespace": namespace, "id": generation_id},
    )


async def rollback(session: AsyncSession, scope: Scope, *, force: bool = False) -> Generation:
    """Re-activate the most recently retired generation (or abandon a building one).

    With a re-index still building, rolling back cancels it instead: its jobs
    are cancelled and its rows deleted, and the active generation stays.

    A retired generation stops receiving writes at the switch, so documents
    uploaded or replaced since then are missing from it, or stale.  Rolling
    back over them is refused with their count (a :class:`Conflict`) unless
    ``force``; re-indexing into the old model brings it up to date instead.
    """
    live = await live_generations(session)
    building = next((g for g in live if g.state == "building"), None)
    if building is not None:
        await _discard(session, building.id)
        active = next(g for g in live if g.state == "active")
        return active
    previous = (
        await session.execute(
            text(
                "SELECT id, embedding_model, embedding_dim, state, embedder, retired_at "
                "FROM ragsage_generations WHERE namespace = :namespace AND state = 'retired' "
                "ORDER BY retired_at DESC NULLS LAST, id DESC LIMIT 1"
            ),
            {"namespace": scope.namespace},
        )
    ).first()
    if previous is None:
        raise Conflict(f"namespace {scope.namespace!r} has no previous generation")
    lost = await _missing_since_retired(session, int(previous[0]), previous[5])
    if lost and not force:
        raise Conflict(
            f"rolling back {scope.namespace!r} to {previous[1]} would lose {lost} "
            f"document{'s' if lost != 1 else ''} uploaded or replaced since the switch; "
            f"re-index into {previous[1]} instead, or force the rollback"
        )
    await _lock_generations(session)
    await _switch(session, int(previous[0]))
    return Generation(int(previous[0]), str(previous[1]), int(previous[2]), "active", previous[4])


async def _missing_since_retired(
    session: AsyncSession, generation_id: int, retired_at: object
) -> int:
    """Ready documents a retired generation lacks, or holds an older version of."""
    count = await session.scalar(
        text(
            "SELECT count(*) FROM ragsage_documents d WHERE d.namespace = :namespace "
            "AND d.status = 'ready' AND ("
            "(CAST(:retired_at AS timestamptz) IS NOT NULL AND d.updated_at > :retired_at) "
            "OR NOT EXISTS (SELECT 1 FROM ragsage_chunks c WHERE c.namespace = d.namespace "
            "AND c.generation = :generation AND c.document_id = d.id))"
        ),
        {
            "namespace": namespace_of(session),
            "generation": generation_id,
            "retired_at": retired_at,
        },
    )
    return int(count or 0)


async def drop_previous(session: AsyncSession) -> int:
    """Delete retired generations and their rows; returns how many chunks were freed."""
    retired = list(
        await session.scalars(
            text(
                "SELECT id FROM ragsage_generations "
                "WHERE namespace = :namespace AND state = 'retired'"
            ),
            {"namespace": namespace_of(session)},
        )
    )
    freed = 0
    for generation_id in retired:
        freed += await _discard(session, generation_id)
    return freed


async def _discard(session: AsyncSession, generation_id: int) -> int:
    params = {"namespace": namespace_of(session), "id": generation_id}
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET state = 'cancelled', finished_at = now(), "
            "lease_expires_at = NULL WHERE namespace = :namespace AND kind = 'reindex' "
            "AND generation = :id AND state IN ('queued', 'running')"
        ),
        params,
    )
    # The generation's row first: the chunk trigger counts no row of a
    # generation that is gone, so its term counts go whole, not chunk by chunk.
    await session.execute(
        text("DELETE FROM ragsage_generations WHERE namespace = :namespace AND id = :id"),
        params,
    )
    deleted = await session.execute(
        text("DELETE FROM ragsage_chunks WHERE namespace = :namespace AND generation = :id"),
        params,
    )
    for table in STATISTICS_TABLES:
        await session.execute(
            text(f"DELETE FROM {table} WHERE namespace = :namespace AND generation = :id"),
            params,
        )
    return int(deleted.rowcount or 0)  # type: ignore[attr-defined]


async def record_gate(session: AsyncSession, generation_id: int, verdict: dict[str, Any]) -> None:
    """Keep the gate's figures and decision on the generation it judged."""
    await session.execute(
        text(
            "UPDATE ragsage_generations SET gate = CAST(:gate AS jsonb) "
            "WHERE namespace = :namespace AND id = :id"
        ),
        {"namespace": namespace_of(session), "gate": json.dumps(verdict), "id": generation_id},
    )


async def kept_chunks(
    session: AsyncSession, generation: int, document_id: str, chunking: str
) -> list[tuple[int, str]] | None:
    """A document's ``(ordinal, embed text)`` in ``generation``, if cut with ``chunking``.

    None when the document has no rows there or any row was cut otherwise
    (other settings, or written before storage migration 26): the re-index
    then chunks it again from its pages.
    """
    rows = await session.execute(
        text(
            "SELECT ordinal, embed_text, chunking FROM ragsage_chunks "
            "WHERE namespace = :namespace AND generation = :generation "
            "AND document_id = :document ORDER BY ordinal"
        ),
        {"namespace": namespace_of(session), "generation": generation, "document": document_id},
    )
    found = [(int(r[0]), str(r[1]), r[2]) for r in rows]
    if not found or any(cut != chunking for _, _, cut in found):
        return None
    return [(ordinal, embed_text) for ordinal, embed_text, _ in found]
