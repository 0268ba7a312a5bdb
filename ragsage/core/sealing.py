"""What code that stores secrets needs of the operator's sealing key (an adapter provides it).

The stores (Postgres) never see the key itself: they are handed something
that seals, opens and makes the check a new API key carries.  The one
implementation is :class:`ragsage.adapters.sealing.Sealer`.
"""

from __future__ import annotations

from typing import Protocol


class Seals(Protocol):
    """Seals and opens stored secrets, and makes and checks the MAC new API keys carry."""

    def seal(self, secret: str) -> str: ...

    def open(self, sealed: str, what: str = ...) -> str: ...

    def check(self, message: str) -> str: ...

    def checks(self, message: str, check: str) -> bool: ...


class DatedSeals(Protocol):
    """Seals a value with the time it was sealed, under keys kept for one purpose."""

    def derived(self, purpose: str) -> DatedSeals: ...

    def seal_at(self, secret: str, when: int) -> str: ...

    def open_dated(self, sealed: str) -> tuple[str, int] | None: ...
