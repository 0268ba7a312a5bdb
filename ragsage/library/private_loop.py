"""The event loop a facade owns in a thread of its own, and closing it.

Sync calls run their coroutine there and wait, which works even where the
calling thread already runs a loop (Jupyter); async calls await it from their
own loop.  A Postgres pool is only ever used from the one loop it was opened
on, so every call of one facade goes through the same loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

from ragsage.core.errors import RagsageError
from ragsage.runtime.loop import LoopThread

_T = TypeVar("_T")


class LoopOwner:
    """A base for objects whose work runs on a private loop; close it to stop the thread."""

    def _open_loop(self, name: str) -> None:
        self._loop_name = name
        self._loop_thread: LoopThread | None = None
        self._loop_lock = threading.Lock()
        self._closed = False

    async def _release(self) -> None:
        """Free what the work holds (connections); runs on the loop while closing."""

    def _loop(self) -> LoopThread:
        with self._loop_lock:
            if self._closed:
                raise RagsageError(f"this {type(self).__name__} is closed")
            if self._loop_thread is None:
                self._loop_thread = LoopThread(name=self._loop_name)
                # An owner dropped without close() must not leave its thread behind.
                weakref.finalize(self, self._loop_thread.stop)
            return self._loop_thread

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        try:
            loop = self._loop()
        except BaseException:
            coroutine.close()
            raise
        return loop.run(coroutine)

    async def _arun(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        try:
            loop = self._loop()
        except BaseException:
            coroutine.close()
            raise
        return await asyncio.wrap_future(loop.submit(coroutine))

    def close(self) -> None:
        """Release connections and stop the loop thread; later calls raise."""
        with self._loop_lock:
            if self._closed:
                return
            self._closed = True
            loop, self._loop_thread = self._loop_thread, None
        if loop is None:
            loop = LoopThread(name=f"{self._loop_name}-close")
        try:
            loop.run(self._release())
        finally:
            loop.stop()

    async def aclose(self) -> None:
        """:meth:`close` for async code (the blocking part runs in a thread)."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
