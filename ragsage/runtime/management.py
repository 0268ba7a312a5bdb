"""The management services of one process, built over its database."""

from __future__ import annotations

from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.management import (
    PgDocumentRecords,
    PgJobRecords,
    PgKeyRecords,
    PgUsageRecords,
    PgWebhookRecords,
)
from ragsage.adapters.sealing import Sealer, sealer_or_none
from ragsage.adapters.webhooks.addresses import ReceiverAddresses
from ragsage.core.sealing import Seals
from ragsage.management import Documents, Jobs, Keys, Management, Usage
from ragsage.management.webhooks import WebhookRules, Webhooks
from ragsage.settings import Settings


def build_management(database: Database, settings: Settings) -> Management:
    """Every management service over ``database``, under ``settings``' limits."""
    return Management(
        documents=Documents(PgDocumentRecords(database)),
        jobs=Jobs(PgJobRecords(database)),
        keys=Keys(PgKeyRecords(database), sealer_or_none(settings.sealing_keys)),
        usage=Usage(PgUsageRecords(database), settings.quotas(), settings.job_namespace_slots),
        webhooks=_webhooks(database, settings),
    )


def _webhooks(database: Database, settings: Settings) -> Webhooks:
    # The signing module loads the signing library: read when a process first asks
    # for its services, not with this module.
    from ragsage.adapters.webhooks.signing import new_secret

    def sealer() -> Seals:
        return Sealer(settings.sealing_keys)

    rules = WebhookRules(
        settings.webhook_max_endpoints,
        settings.webhook_allow_private,
        settings.webhook_rotation_grace,
    )
    return Webhooks(PgWebhookRecords(database), rules, ReceiverAddresses(), new_secret, sealer)
