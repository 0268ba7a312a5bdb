"""Rendered page pictures this process has served, kept within a byte budget.

A reader checking citations opens the same few pages again and again; PDFium
renders a page in tens of milliseconds, so the last ones are kept, keyed by
the namespace, the document version (its content hash), the page and the
width, and the oldest dropped first once the budget is spent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

Key = tuple[str, str, int, int]


class PageCache:
    def __init__(self, budget_bytes: int = 64 * 1024 * 1024) -> None:
        self.budget = budget_bytes
        self._kept: OrderedDict[Key, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Key) -> bytes | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: Key, picture: bytes) -> None:
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
