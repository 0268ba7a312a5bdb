"""Which principal a key had when this process last accepted it."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ragsage.adapters.postgres.keys import Principal


class RecentKeys:
    """The principals of keys this process accepted lately, by the key's hash.

    Only ever a hint of which namespace a search will run in: every request
    still has its key checked against the database before it is answered.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._known: OrderedDict[str, Principal] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> Principal | None:
        with self._lock:
            return self._known.get(digest)

    def remember(self, digest: str, principal: Principal) -> None:
        with self._lock:
            self._known[digest] = principal
            self._known.move_to_end(digest)
            while len(self._known) > self._size:
                self._known.popitem(last=False)

    def forget(self, digest: str) -> None:
        with self._lock:
            self._known.pop(digest, None)
