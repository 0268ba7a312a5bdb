"""One long-lived event loop per process, for synchronous callers of async code.

Flask views and Celery tasks are synchronous; the storage and model adapters
are async.  Running ``asyncio.run`` per request would create a loop per call and
strand the async engine's pooled connections on loops that no longer exist, so
each process owns one loop in a daemon thread and submits coroutines to it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

_T = TypeVar("_T")


class LoopThread:
    """An event loop running forever in a background thread."""

    def __init__(self, name: str = "ragsage-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, _T]) -> Future[_T]:
        """Schedule ``coroutine`` on the loop and return its future."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run called from its own loop; await instead")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def run(self, coroutine: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
        """Run ``coroutine`` on the loop and wait for its result.

        If the wait is interrupted (a timeout, or a signal-raised exception such
        as a Celery soft time limit), the coroutine is cancelled rather than left
        running unattended.
        """
        future = self.submit(coroutine)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and wait for its thread."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()
