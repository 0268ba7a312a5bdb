"""What a namespace holds and may hold, as its admin reads it."""

from __future__ import annotations

from ragsage.core.jobs import Quotas
from ragsage.core.management_ports import NamespaceUsage, UsageRecords
from ragsage.core.scopes import Scope


class Usage:
    """A namespace's usage beside the quotas that apply to it."""

    def __init__(self, records: UsageRecords, defaults: Quotas, job_slots: int) -> None:
        self._records = records
        self._defaults = defaults
        self._job_slots = job_slots

    async def of(self, scope: Scope) -> NamespaceUsage:
        return await self._records.usage(scope, self._defaults)

    async def search_timeout_ms(self, scope: Scope, default: int) -> int:
        """The namespace's statement timeout for searches: its own, or ``default``."""
        own = (await self._records.overrides(scope)).get("search_timeout_ms")
        return own or default

    def job_slots(self, usage: NamespaceUsage) -> int:
        """The namespace's share of running jobs: its own override, or the deployment's."""
        own = usage.overrides.get("job_slots")
        return self._job_slots if own is None else own
