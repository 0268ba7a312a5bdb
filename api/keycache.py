"""What this process last read of keys: accepted API keys, and the parents of restricted keys."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from ragsage.adapters.postgres.keys import Principal, Signer


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


class Signers:
    """What this process last read of each delegate key that restricted keys name.

    A restricted key is checked against its parent as read here, at most
    ``recheck`` seconds ago, so revoking or rotating a parent reaches every
    key under it within that bound and no restricted key costs a lookup of
    its own.  A parent found missing is remembered too, so a flood of tokens
    naming one costs one lookup per ``recheck``.
    """

    def __init__(self, recheck: float, size: int = 4096) -> None:
        self.recheck = recheck
        self._size = size
        self._known: OrderedDict[tuple[str, str], tuple[Signer | None, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, parent: tuple[str, str]) -> tuple[Signer | None, float] | None:
        """The parent as last read and how many seconds ago, or None if never or too long ago."""
        with self._lock:
            found = self._known.get(parent)
        if found is None:
            return None
        age = time.monotonic() - found[1]
        return None if age >= self.recheck else (found[0], age)

    def put(self, parent: tuple[str, str], signer: Signer | None, read_at: float) -> None:
        """Remember ``signer`` as read at ``read_at`` (monotonic, taken before the read)."""
        with self._lock:
            self._known[parent] = (signer, read_at)
            self._known.move_to_end(parent)
            while len(self._known) > self._size:
                self._known.popitem(last=False)
