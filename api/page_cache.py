"""Rendered page pictures this process has served, kept within a byte budget.

A reader checking citations opens the same few pages again and again; PDFium
renders a page in tens of milliseconds, so the last ones are kept, keyed by
the namespace, the document version (its content hash), the page and the
width, and the oldest dropped first once the budget is spent.

Drawing a page is the API's one piece of real CPU work outside a search, so
only a few are drawn at once in a process; a request that cannot start one
within a few seconds is told to come back (503) instead of queueing threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

# (namespace, content hash of the version, page number, width)
PageKey = tuple[str, str, int, int]


class Busy(Exception):
    """Every drawing slot of this process stayed taken for the whole wait."""


class PageCache:
    def __init__(
        self, budget_bytes: int = 64 * 1024 * 1024, drawing_at_once: int = 2, wait: float = 5.0
    ) -> None:
        self.budget = budget_bytes
        self.wait = wait
        self._drawing = threading.BoundedSemaphore(drawing_at_once)
        self._kept: OrderedDict[PageKey, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: PageKey) -> bytes | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: PageKey, picture: bytes) -> None:
        if len(picture) > self.budget:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            self._size -= len(old) if old is not None else 0
            self._kept[key] = picture
            self._size += len(picture)
            while self._size > self.budget:
                _, dropped = self._kept.popitem(last=False)
                self._size -= len(dropped)

    @contextmanager
    def drawing(self) -> Iterator[None]:
        """A slot to draw one page in, waited for at most ``wait`` seconds."""
        if not self._drawing.acquire(timeout=self.wait):
            raise Busy
        try:
            yield
        finally:
            self._drawing.release()
