"""Management: the services the API, the command line and the library share.

Beside query and ingestion, a service layer: each service depends on the
core and on storage ports (:mod:`ragsage.core.management_ports`), never on
an adapter; the composition root builds them over Postgres
(:func:`ragsage.runtime.management.build_management`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragsage.management.documents import Documents, Jobs
from ragsage.management.keys import Keys
from ragsage.management.usage import Usage
from ragsage.management.webhooks import Webhooks


@dataclass(frozen=True, slots=True)
class Management:
    """Every management service of one process."""

    documents: Documents
    jobs: Jobs
    keys: Keys
    usage: Usage
    webhooks: Webhooks


__all__ = ["Documents", "Jobs", "Keys", "Management", "Usage", "Webhooks"]
