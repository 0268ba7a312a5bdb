"""Vector widths come from the operator's configured set; only migrate builds their indexes."""

from __future__ import annotations

from sqlalchemy import text

from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.core.keys import Role

from .api_harness import ApiServer, make_key, with_database
from .conftest import TEST_DIM, TEST_WIDTHS
from .worker_harness import Deployment


async def _indexes(database: Database) -> dict[str, bool]:
    async with database.owner_connection() as connection:
        rows = await connection.execute(
            text(
                "SELECT c.relname, i.indisvalid FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname = 'ragsage_chunks'"
            )
        )
        return {str(name): bool(valid) for name, valid in rows}


async def test_migrate_builds_one_index_per_configured_width(db: Database) -> None:
    indexes = await _indexes(db)
    for width in (*TEST_WIDTHS, TEST_DIM):
        assert indexes[f"ragsage_chunks_embedding_{width}"] is True
    assert "ragsage_chunks_embedding_512" not in indexes


def test_a_width_added_later_is_built_on_a_table_holding_vectors(
    deployment: Deployment, api: ApiServer
) -> None:
    deployment.worker().start(pool="solo")
    outcome = deployment.enqueuer.enqueue_document(
        "acme", "pump.md", data=b"# Pump\n\nThe pump primes itself in ninety seconds.\n"
    )
    deployment.wait("acme", [str(outcome.job_id)])
    assert deployment.chunk_count("acme") > 0
    wider = deployment.settings.replace(embedding_widths="16,64,128,512")

    async def add_width(database: Database) -> dict[str, bool]:
        # An index a failed concurrent build left invalid is rebuilt, too.
        async with database.owner_connection() as connection:
            await connection.execute(
                text(
                    "UPDATE pg_index SET indisvalid = false WHERE indexrelid = "
                    "'ragsage_chunks_embedding_64'::regclass"
                )
            )
        await database.migrate()
        return await _indexes(database)

    indexes = with_database(wider, add_width)
    assert indexes["ragsage_chunks_embedding_512"] is True
    assert indexes["ragsage_chunks_embedding_64"] is True
    client = api.client(make_key(deployment.settings, "acme", Role.READ))
    hits = client.post("/v1/search", json={"query": "pump primes"}).json()["results"]
    assert hits and hits[0]["chunk"]["source"] == "pump.md"


def test_a_reindex_into_a_width_not_configured_is_a_422_and_creates_nothing(
    deployment: Deployment, api: ApiServer
) -> None:
    admin = api.client(make_key(deployment.settings, "tenant", Role.ADMIN))
    before = with_database(deployment.settings, _indexes)
    for body in (
        {"embedding_model": "ragsage-hashing-512"},
        {"embedding_model": "ragsage-hashing-200", "dim": 200},
    ):
        reply = admin.post("/v1/reindex", json=body)
        assert reply.status_code == 422, reply.text
        error = reply.json()["error"]
        assert error["code"] == "unsupported_width"
        assert "indexes 16, 64, 128, 256" in error["message"]
    assert with_database(deployment.settings, _indexes) == before


def test_the_default_widths_cover_every_catalog_model_pgvector_can_index() -> None:
    config = PostgresConfig(dsn="postgresql://u@localhost/x", embedding_dim=384)
    assert config.widths == (384,)
    from ragsage.settings import Settings

    assert Settings().indexed_widths() == (256, 384, 512, 1024, 1536)
