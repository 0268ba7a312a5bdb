"""API keys as the API checks them: a request's principal, and delegate keys' secrets."""

from __future__ import annotations

from ragsage.core.errors import ConfigurationError
from ragsage.core.keys import NO_SEALING_KEY, Principal, Signer
from ragsage.core.management_ports import KeyRecords
from ragsage.core.scopes import Scope
from ragsage.core.sealing import Seals


class Keys:
    """Who a key acts as; a delegate key's signing secret, opened or renewed.

    ``sealer`` is the operator's sealing key (``RAGSAGE_SEALING_KEYS``), None
    when none is set: delegate keys' secrets can then be neither read nor made.
    """

    def __init__(self, records: KeyRecords, sealer: Seals | None) -> None:
        self._records = records
        self.sealer = sealer

    async def authenticate(self, key: str) -> Principal | None:
        return await self._records.authenticate(key)

    async def signer(self, namespace: str, key_id: str) -> Signer | None:
        """The live delegate key ``key_id`` of ``namespace`` with its secret; else None."""
        return await self._records.find_signer(namespace, key_id, self._sealing())

    async def rotate_signing_secret(self, scope: Scope, key_id: str) -> str | None:
        """A new secret for the delegate key ``key_id``; restricted keys signed with the
        old one are refused once each API process has re-read it."""
        return await self._records.rotate_signing_secret(scope, key_id, self._sealing())

    def _sealing(self) -> Seals:
        if self.sealer is None:
            raise ConfigurationError(NO_SEALING_KEY)
        return self.sealer
