"""Embedders that adapt user code to the Embedder port."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ragsage.core.errors import ConfigurationError, PermanentProviderError
from ragsage.core.ports import InputType

EmbedFunction = Callable[
    [list[str]], "Sequence[Sequence[float]] | Awaitable[Sequence[Sequence[float]]]"
]


class EmbedderOutputError(PermanentProviderError):
    """A wrapped embedding function returned something other than one vector per text."""


class CallableEmbedder:
    """The Embedder port over any ``list[str] -> list[list[float]]`` function.

    The function may be synchronous (it then runs in a worker thread, so a local
    model does not stall the event loop) or ``async``.  Every reply is checked
    before it can reach a store: one vector per text, each exactly ``dimension``
    finite numbers; anything else raises :class:`EmbedderOutputError` naming the
    mismatch.
    """

    def __init__(
        self,
        fn: EmbedFunction,
        *,
        dimension: int,
        model: str = "callable",
        similarity_floor: float = 0.0,
    ) -> None:
        if not callable(fn):
            raise ConfigurationError(f"CallableEmbedder needs a function, got {type(fn).__name__}")
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise ConfigurationError(f"dimension must be a positive integer, got {dimension!r}")
        if not model:
            raise ConfigurationError("model must be a non-empty name")
        self._fn = fn
        self._dimension = dimension
        self._model = model
        self._floor = similarity_floor

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def similarity_floor(self) -> float:
        return self._floor

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        batch = list(texts)
        if not batch:
            return []
        if inspect.iscoroutinefunction(self._fn):
            reply: Any = await self._fn(batch)
        else:
            reply = await asyncio.to_thread(self._fn, batch)
            if inspect.isawaitable(reply):
                reply = await reply
        return self._checked(reply, len(batch))

    def _checked(self, reply: Any, expected: int) -> list[tuple[float, ...]]:
        name = f"embedder {self._model!r}"
        if isinstance(reply, str | bytes) or not isinstance(reply, Sequence):
            raise EmbedderOutputError(
                f"{name} returned {type(reply).__name__}, expected a list of vectors"
            )
        if len(reply) != expected:
            raise EmbedderOutputError(f"{name} returned {len(reply)} vectors for {expected} texts")
        vectors = []
        for position, vector in enumerate(reply):
            if isinstance(vector, str | bytes) or not isinstance(vector, Sequence):
                raise EmbedderOutputError(
                    f"{name}: vector {position} is {type(vector).__name__}, not a list of numbers"
                )
            if len(vector) != self._dimension:
                raise EmbedderOutputError(
                    f"{name}: vector {position} has {len(vector)} numbers, "
                    f"expected {self._dimension}"
                )
            vectors.append(
                tuple(self._number(value, position, i) for i, value in enumerate(vector))
            )
        return vectors

    def _number(self, value: Any, vector: int, index: int) -> float:
        try:
            # numpy scalars are not int/float subclasses but convert cleanly; a
            # bool or a string would convert too, and is never meant as a number.
            if isinstance(value, bool | str | bytes):
                raise TypeError
            number = float(value)
        except (TypeError, ValueError):
            raise EmbedderOutputError(
                f"embedder {self._model!r}: vector {vector} holds {value!r} at position "
                f"{index}, not a number"
            ) from None
        if not math.isfinite(number):
            raise EmbedderOutputError(
                f"embedder {self._model!r}: vector {vector} holds {number} at position {index}; "
                "every number must be finite"
            )
        return number
