"""The management services of one process, built over its database."""

from __future__ import annotations

from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.management import PgDocumentRecords, PgJobRecords, PgUsageRecords
from ragsage.management import Documents, Jobs, Management, Usage
from ragsage.settings import Settings


def build_management(database: Database, settings: Settings) -> Management:
    return Management(
        documents=Documents(PgDocumentRecords(database)),
        jobs=Jobs(PgJobRecords(database)),
        usage=Usage(PgUsageRecords(database), settings.quotas(), settings.job_namespace_slots),
    )
