"""A version's bytes and its resolved pages, as Postgres keeps them for later jobs.

The pages are stored once resolved (vision included), so a re-index or a
reprocess reads them back instead of parsing, or paying for vision, again.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.geometry import PagePositions
from ragsage.core.pages import Page, PageRoute


async def load_blob(session: AsyncSession, content_hash: str) -> bytes | None:
    data = await session.scalar(
        text(
            "SELECT data FROM ragsage_blobs WHERE namespace = :namespace AND content_hash = :hash"
        ),
        {"namespace": namespace_of(session), "hash": content_hash},
    )
    return bytes(data) if data is not None else None


async def save_pages(
    session: AsyncSession, namespace: str, content_hash: str, pages: Sequence[Page]
) -> None:
    """Keep a version's resolved pages, so re-indexing never pays for vision again."""
    await session.execute(
        text("DELETE FROM ragsage_pages WHERE namespace = :namespace AND content_hash = :hash"),
        {"namespace": namespace, "hash": content_hash},
    )
    if pages:
        await session.execute(
            text(
                "INSERT INTO ragsage_pages "
                "(namespace, content_hash, number, text, route, positions) "
                "VALUES (:namespace, :hash, :number, :text, :route, :positions) "
                # A session bound to principals neither sees nor deletes stored pages
                # (migration 22): the same bytes' pages, kept already, stay as they are.
                "ON CONFLICT DO NOTHING"
            ),
            [
                {
                    "namespace": namespace,
                    "hash": content_hash,
                    "number": page.number,
                    "text": page.text,
                    "route": (page.route or PageRoute.TEXT).value,
                    "positions": Jsonb(page.positions.to_dict()) if page.positions else None,
                }
                for page in pages
            ],
        )


async def load_pages(session: AsyncSession, content_hash: str) -> list[Page]:
    rows = await session.execute(
        text(
            "SELECT number, text, route, positions FROM ragsage_pages "
            "WHERE namespace = :namespace AND content_hash = :hash ORDER BY number"
        ),
        {"namespace": namespace_of(session), "hash": content_hash},
    )
    return [
        Page(
            number=row[0],
            text=row[1],
            route=PageRoute(row[2]),
            positions=PagePositions.from_dict(row[3], text=row[1]) if row[3] else None,
        )
        for row in rows
    ]


async def skipped_scan_numbers(session: AsyncSession, content_hash: str) -> list[int]:
    """The stored pages of a version that are scans no transcriber read (kept empty).

    Asked of the database, so a re-index learns it without loading every page's text.
    """
    rows = await session.execute(
        text(
            "SELECT number FROM ragsage_pages WHERE namespace = :namespace "
            "AND content_hash = :hash AND route = :route AND text !~ '\\S' ORDER BY number"
        ),
        {"namespace": namespace_of(session), "hash": content_hash, "route": PageRoute.VISION.value},
    )
    return [int(row[0]) for row in rows]


async def delete_unreferenced(session: AsyncSession, content_hash: str) -> None:
    """Delete a version's blob and pages unless a document or open job still needs them.

    Through the privileged ``ragsage_forget_content``: a session bound to
    principals cannot see every document that may share the bytes, nor the
    bytes themselves (migration 22).
    """
    await session.execute(text("SELECT ragsage_forget_content(:hash)"), {"hash": content_hash})
