"""Re-indexing a namespace from an upload service: start, switch, roll back, report.

:class:`ReindexControls` drives a deployment's embedding generations.  An
:class:`~ragsage.jobs.enqueue.Enqueuer` holds one (``enqueuer.reindex``) built
on its own loop, database and sends, so every call runs where the enqueuer's
pool lives and the jobs it queues go out through the enqueuer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from uuid import UUID

from ragsage.adapters.postgres import Database
from ragsage.core.errors import ConfigurationError, InvalidRequest, UnsupportedWidth
from ragsage.core.generations import Generation
from ragsage.core.scopes import Scope
from ragsage.runtime.loop import LoopThread
from ragsage.settings import Settings


class SendJobs(Protocol):
    """Sends committed jobs' messages; returns how many the broker took."""

    def __call__(self, namespace: str, job_ids: Sequence[UUID], kind: str = "ingest") -> int: ...


class ReindexControls:
    """Generation control for one deployment: its settings, database, loop and sends."""

    def __init__(
        self, settings: Settings, database: Database, loop: LoopThread, send: SendJobs
    ) -> None:
        self.settings, self.database = settings, database
        self._loop, self._send = loop, send

    def start(
        self,
        namespace: str,
        *,
        embedder: str,
        model: str,
        dim: int | None = None,
        held: bool = False,
    ) -> tuple[int, int]:
        """Start (or resume) re-indexing a namespace into ``model``; (generation, jobs sent).

        The target embedder is built first, so a model that cannot be reached or
        has an unknown width fails here, before anything is queued.  Its width
        must be one this install indexes (``RAGSAGE_EMBEDDING_WIDTHS``, built by
        ``ragsage migrate``): a request never runs DDL.  A ``held`` generation
        does not switch when complete; see :meth:`activate_held`.
        """
        from ragsage.adapters.postgres.jobs import reindex
        from ragsage.runtime import make_embedder

        try:
            width = make_embedder(self.settings, embedder, model, dim).dimension
        except (ConfigurationError, ValueError) as exc:  # ValueError: a width it cannot make
            raise InvalidRequest(f"cannot re-index into {embedder}/{model}: {exc}") from exc
        indexed = self.database.config.widths
        if width not in indexed:
            raise UnsupportedWidth(
                f"cannot re-index into {embedder}/{model}: its vectors have {width} dimensions, "
                f"and this deployment indexes {', '.join(map(str, indexed))}; ask for one of "
                "those with dim, or have the operator add the width to RAGSAGE_EMBEDDING_WIDTHS "
                "and run `ragsage migrate`"
            )
        scope = Scope(namespace)

        async def prepare() -> tuple[int, list[UUID]]:
            async with self.database.session(scope) as session:
                generation, job_ids = await reindex.start(
                    session, scope, embedder=embedder, model=model, dim=width, held=held
                )
            return generation.id, job_ids

        generation_id, job_ids = self._loop.run(prepare())
        self._send(namespace, job_ids, kind="reindex")
        return generation_id, len(job_ids)

    def activate_held(self, namespace: str, generation: int) -> Generation:
        """Switch a namespace to its complete building generation (a gate's decision)."""
        from ragsage.adapters.postgres import active_generation
        from ragsage.adapters.postgres.jobs import reindex

        scope = Scope(namespace)

        async def switch() -> Generation:
            async with self.database.session(scope) as session:
                await reindex.activate_held(session, scope, generation)
                active = await active_generation(session)
            assert active is not None and active.id == generation
            return active

        result: Generation = self._loop.run(switch())
        return result

    def rollback(self, namespace: str, *, force: bool = False) -> Generation:
        """Abandon a building re-index, or re-activate the previous generation.

        Refused (:class:`~ragsage.core.errors.Conflict`, with the count) when the
        previous generation lacks documents uploaded or replaced since the
        switch, unless ``force``.
        """
        from ragsage.adapters.postgres.jobs import reindex

        scope = Scope(namespace)

        async def act() -> Generation:
            async with self.database.session(scope) as session:
                return await reindex.rollback(session, scope, force=force)

        result: Generation = self._loop.run(act())
        return result

    def reprocess(self, namespace: str, *, only_skipped_pages: bool = False) -> list[UUID]:
        """Read the namespace's documents again from their stored bytes; returns the jobs."""
        from ragsage.adapters.postgres.jobs import reprocess

        scope = Scope(namespace)

        async def record() -> list[UUID]:
            async with self.database.session(scope) as session:
                return await reprocess.queue(session, scope, only_skipped_pages=only_skipped_pages)

        job_ids: list[UUID] = self._loop.run(record())
        self._send(namespace, job_ids)
        return job_ids

    def drop_previous(self, namespace: str) -> int:
        """Delete the namespace's retired generations; returns the chunks freed."""
        from ragsage.adapters.postgres.jobs import reindex

        async def act() -> int:
            async with self.database.session(Scope(namespace)) as session:
                return await reindex.drop_previous(session)

        return int(self._loop.run(act()))

    def record_gate(self, namespace: str, generation: int, verdict: dict[str, Any]) -> None:
        """Keep an evaluation gate's verdict on the generation it judged."""
        from ragsage.adapters.postgres.jobs import reindex

        async def act() -> None:
            async with self.database.session(Scope(namespace)) as session:
                await reindex.record_gate(session, generation, verdict)

        self._loop.run(act())

    def status(self, namespace: str) -> list[dict[str, Any]]:
        """Every generation of the namespace with its re-index progress."""
        from ragsage.adapters.postgres.jobs.reindex_status import status

        async def read() -> list[dict[str, Any]]:
            async with self.database.session(Scope(namespace)) as session:
                return [g.to_dict() for g in await status(session)]

        return self._loop.run(read())
