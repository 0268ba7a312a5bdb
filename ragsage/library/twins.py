"""Every facade operation written once, and offered both as a plain method and a coroutine.

An operation is a method that checks its arguments in the caller's thread and
returns a :class:`Work`: the coroutine to run on the facade's private loop,
and what to do with its result back in the caller's context (source tracking
is per thread and per task, so it cannot happen on the loop).
:func:`blocking` and :func:`awaiting` make the two public forms of it::

    def _count(self) -> Work[int]:
        "How many chunks this namespace holds."
        return Work(self._engine_call(...))

    count = blocking(_count)
    acount = awaiting(_count)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

_T = TypeVar("_T")
_P = ParamSpec("_P")


class RunsOnLoop(Protocol):
    """What owns the private loop: it runs a coroutine there, blocking or awaited."""

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T: ...

    async def _arun(self, coroutine: Coroutine[Any, Any, _T]) -> _T: ...


_Owner = TypeVar("_Owner", bound=RunsOnLoop)


def _unchanged(result: _T) -> _T:
    return result


@dataclass(frozen=True, slots=True)
class Work(Generic[_T]):
    """One call's coroutine, and the step its result takes in the caller's context."""

    coroutine: Coroutine[Any, Any, _T]
    finish: Callable[[_T], _T] = _unchanged


def blocking(
    operation: Callable[Concatenate[_Owner, _P], Work[_T]],
) -> Callable[Concatenate[_Owner, _P], _T]:
    """The plain method: runs the operation's work on the loop and waits for it."""

    @functools.wraps(operation)
    def call(self: _Owner, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        work = operation(self, *args, **kwargs)
        return work.finish(self._run(work.coroutine))

    _named(call, operation, "")
    return call


def awaiting(
    operation: Callable[Concatenate[_Owner, _P], Work[_T]],
) -> Callable[Concatenate[_Owner, _P], Coroutine[Any, Any, _T]]:
    """The coroutine: awaits the operation's work on the loop from the caller's loop."""

    @functools.wraps(operation)
    async def call(self: _Owner, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        work = operation(self, *args, **kwargs)
        return work.finish(await self._arun(work.coroutine))

    _named(call, operation, "a")
    return call


def _named(form: Callable[..., Any], operation: Callable[..., Any], prefix: str) -> None:
    """Give a public form its own name and the signature a caller sees (the result, not Work)."""
    name = prefix + operation.__name__.lstrip("_")
    form.__name__ = name
    form.__qualname__ = operation.__qualname__.rsplit(".", 1)[0] + "." + name
    signature = inspect.signature(operation)
    returned = signature.return_annotation
    if isinstance(returned, str) and returned.startswith("Work[") and returned.endswith("]"):
        returned = returned[len("Work[") : -1]
    form.__signature__ = signature.replace(return_annotation=returned)  # type: ignore[attr-defined]
