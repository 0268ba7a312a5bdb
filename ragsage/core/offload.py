"""Where CPU-bound stages run: never on the event loop.

Parsing, chunking and contextualizing are plain functions that can hold the
CPU for seconds.  On the event loop they would stall every other coroutine of
the process (heartbeats, other documents, HTTP clients), so the pipeline hands
them to :func:`run_cpu`.  By default that is a thread of the loop's pool.

A worker wants more: when Celery's soft time limit fires, the work itself must
stop, not just the coroutine that waits for it.  The limit arrives as an
exception in the thread that waits for the job, so a worker runs the job with
:class:`CallerThread`: the CPU stages are executed *by that waiting thread*,
and the exception interrupts the stage it lands in.
"""

from __future__ import annotations

import asyncio
import functools
import queue
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, Future, InvalidStateError
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

_executor: ContextVar[Executor | None] = ContextVar("ragsage_cpu_executor", default=None)


async def run_cpu(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run ``fn`` off the event loop, on the executor the current job chose."""
    executor = _executor.get()
    call = functools.partial(fn, *args, **kwargs)
    if executor is None:
        return await asyncio.to_thread(call)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


async def using(executor: Executor, work: Coroutine[Any, Any, _T]) -> _T:
    """Await ``work`` with its CPU stages (and those of tasks it starts) sent to ``executor``."""
    token = _executor.set(executor)
    try:
        return await work
    finally:
        _executor.reset(token)


class CallerThread(Executor):
    """Runs submitted calls in the thread that called :meth:`drive`, until a future is done.

    Calls run one at a time, in order.  An exception of an ``interrupts`` type
    (a time limit raised into this thread by a signal) is not the call's to
    report: it cancels the call's future, so the coroutine awaiting it unwinds,
    and leaves :meth:`drive`.  Other exceptions go to the awaiting coroutine.
    """

    def __init__(self, interrupts: tuple[type[BaseException], ...] = ()) -> None:
        self.interrupts = interrupts
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        self._calls.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def drive(self, done: Future[_T]) -> _T:
        """Execute submitted calls here until ``done`` completes; return its result."""
        done.add_done_callback(lambda _: self._calls.put(None))
        while True:
            item = self._calls.get()
            if item is None:
                if done.done():
                    return done.result()
                continue
            future, call = item
            # Left pending while it runs, so an interrupt can still cancel it.
            if future.cancelled():
                continue
            try:
                result = call()
            except BaseException as exc:
                if isinstance(exc, Exception) and not isinstance(exc, self.interrupts):
                    _settle(future, exc)
                    continue
                future.cancel()
                raise
            _settle(future, result)


def _settle(future: Future[Any], outcome: object) -> None:
    try:
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
    except InvalidStateError:
        pass  # cancelled meanwhile: nobody waits for it any more
