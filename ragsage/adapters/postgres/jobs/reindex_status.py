"""What a namespace's re-index looks like now: every generation, its chunks and jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.jobs.reindex import missing_documents
from ragsage.adapters.postgres.sessions import namespace_of


@dataclass(frozen=True, slots=True)
class GenerationStatus:
    """A generation with its re-index progress."""

    id: int
    embedder: str
    embedding_model: str
    embedding_dim: int
    state: str
    chunks: int
    done: int
    failed: int
    pending: int
    total: int
    failures: tuple[tuple[str, str], ...]
    held: bool = False
    complete: bool = False
    gate: dict[str, Any] | None = None

    @property
    def awaiting_gate(self) -> bool:
        """Every document is in it, and it waits for an explicit activation."""
        return self.state == "building" and self.held and self.complete

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "embedder": self.embedder,
            "embedding_model": self.embedding_model,
            "embedding_dim": self.embedding_dim,
            "state": self.state,
            "chunks": self.chunks,
            "done": self.done,
            "failed": self.failed,
            "pending": self.pending,
            "total": self.total,
            "failures": [{"filename": name, "error": error} for name, error in self.failures],
            "held": self.held,
            "complete": self.complete,
            "awaiting_gate": self.awaiting_gate,
            "gate": self.gate,
        }


async def status(session: AsyncSession) -> list[GenerationStatus]:
    """Every generation of the namespace, with chunk counts and re-index progress."""
    namespace = {"namespace": namespace_of(session)}
    rows = await session.execute(
        text(
            "SELECT g.id, g.embedder, g.embedding_model, g.embedding_dim, g.state, "
            "(SELECT count(*) FROM ragsage_chunks c "
            " WHERE c.namespace = g.namespace AND c.generation = g.id), "
            "(SELECT count(*) FILTER (WHERE j.state = 'succeeded') FROM ragsage_jobs j "
            " WHERE j.namespace = g.namespace AND j.kind = 'reindex' AND j.generation = g.id), "
            "(SELECT count(*) FILTER (WHERE j.state = 'failed') FROM ragsage_jobs j "
            " WHERE j.namespace = g.namespace AND j.kind = 'reindex' AND j.generation = g.id), "
            "(SELECT count(*) FILTER (WHERE j.state IN ('queued', 'running')) "
            " FROM ragsage_jobs j "
            " WHERE j.namespace = g.namespace AND j.kind = 'reindex' AND j.generation = g.id), "
            "g.held, g.gate "
            "FROM ragsage_generations g WHERE g.namespace = :namespace ORDER BY g.id"
        ),
        namespace,
    )
    total = int(
        await session.scalar(
            text(
                "SELECT count(*) FROM ragsage_documents "
                "WHERE namespace = :namespace AND status = 'ready'"
            ),
            namespace,
        )
        or 0
    )
    found = []
    for row in rows.all():
        failures = (
            await session.execute(
                text(
                    "SELECT filename, coalesce(error, '') FROM ragsage_jobs "
                    "WHERE namespace = :namespace AND kind = 'reindex' "
                    "AND generation = :id AND state = 'failed' ORDER BY filename LIMIT 20"
                ),
                {**namespace, "id": row[0]},
            )
        ).all()
        found.append(
            GenerationStatus(
                id=int(row[0]),
                embedder=str(row[1]),
                embedding_model=str(row[2]),
                embedding_dim=int(row[3]),
                state=str(row[4]),
                chunks=int(row[5]),
                done=int(row[6]),
                failed=int(row[7]),
                pending=int(row[8]),
                total=total,
                failures=tuple((str(name), str(error)) for name, error in failures),
                held=bool(row[9]),
                complete=row[4] == "building" and not await missing_documents(session, row[0]),
                gate=dict(row[10]) if row[10] is not None else None,
            )
        )
    return found
