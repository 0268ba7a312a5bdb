"""CLI commands that act on a configured ragsage deployment (``RAGSAGE_*`` settings)."""

from __future__ import annotations

import argparse

from ragsage.settings import Settings


async def migrate_command(args: argparse.Namespace) -> int:
    """Create or upgrade the schema of ``RAGSAGE_DATABASE_URL``."""
    # Imported here: the database stack loads only for commands that need it.
    from ragsage.runtime import build_database
    from ragsage.storage import redact

    settings = Settings.from_env()
    database = build_database(settings)
    try:
        version = await database.migrate()
    finally:
        await database.dispose()
    print(f"schema at version {version} on {redact(settings.database_url)}")
    return 0
