"""What this process last read of keys: accepted API keys, and the parents of restricted keys."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from ragsage.core.keys import Principal, Signer


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
    its own.  A parent found missing is remembered too (apart, so that tokens
    naming made-up parents never push a real one out), and a flood of tokens
    naming one costs one lookup per ``recheck``.
    """

    def __init__(self, recheck: float, size: int = 4096) -> None:
        self.recheck = recheck
        self._size = size
        self._found: OrderedDict[tuple[str, str], tuple[Signer, float]] = OrderedDict()
        self._missing: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, parent: tuple[str, str]) -> tuple[Signer | None, float] | None:
        """The parent as last read and how many seconds ago, or None if never or too long ago."""
        with self._lock:
            found = self._found.get(parent)
            read_at = found[1] if found is not None else self._missing.get(parent)
        if read_at is None:
            return None
        age = time.monotonic() - read_at
        if age >= self.recheck:
            return None
        return (found[0] if found is not None else None), age

    def seen_live(self, parent: tuple[str, str]) -> bool:
        """Whether the last reading of ``parent`` here, however old, found it a live key."""
        with self._lock:
            return parent in self._found

    def put(self, parent: tuple[str, str], signer: Signer | None, read_at: float) -> None:
        """Remember ``signer`` as read at ``read_at`` (monotonic, taken before the read)."""
        with self._lock:
            self._found.pop(parent, None)
            self._missing.pop(parent, None)
            if signer is not None:
                self._found[parent] = (signer, read_at)
            else:
                self._missing[parent] = read_at
            for kept in (self._found, self._missing):
                while len(kept) > self._size:
                    kept.popitem(last=False)


class VerifiedKeys:
    """Restricted keys this process checked lately, with the reading of the parent they passed.

    A key presented again is taken as checked, without parsing it, while its
    parent's reading is still the one it passed against (at most
    ``RAGSAGE_RESTRICTED_KEY_RECHECK`` old) and it has not expired: a user's
    every request is spared the signature check.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._known: OrderedDict[str, tuple[Signer, Principal, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> tuple[Signer, Principal] | None:
        """The parent's reading and the principal of an unexpired key checked here."""
        with self._lock:
            found = self._known.get(digest)
        if found is None or found[2] <= time.time():
            return None
        return found[0], found[1]

    def remember(self, digest: str, signer: Signer, principal: Principal) -> None:
        restriction = principal.restriction
        if restriction is None:
            return
        with self._lock:
            self._known[digest] = (signer, principal, restriction.expires_at.timestamp())
            self._known.move_to_end(digest)
            while len(self._known) > self._size:
                self._known.popitem(last=False)
