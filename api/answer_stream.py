"""Relaying an answer's events to a streamed HTTP response, for /v1/query and the chat route.

Both start the stream the same way (the first event is awaited before the
status line, so a failure in retrieval still gets its own status code) and end
it the same way (the engine's stream closed, the key's answer slot given back);
only the wire format of each event differs.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator

from api.services import Services
from ragsage.core.errors import client_message
from ragsage.query import AnswerEvent


def opened(
    here: Services, events: AsyncGenerator[AnswerEvent, None], slot: str | None
) -> AnswerEvent | None:
    """The stream's first event (None if none); on a failure, the stream and slot are let go."""
    try:
        return here.run(anext(events))
    except StopAsyncIteration:
        return None
    except BaseException:
        here.run(events.aclose())
        here.answers.give_back(slot)
        raise


def relayed(
    here: Services,
    events: AsyncGenerator[AnswerEvent, None],
    first: AnswerEvent | None,
    slot: str | None,
) -> Iterator[AnswerEvent]:
    """Every event from ``first`` on, one per call on the process loop; then the stream is let go.

    The arguments were bound before streaming began, so nothing here touches
    the request context.
    """
    event = first
    try:
        while event is not None:
            yield event
            try:
                event = here.run(anext(events))
            except StopAsyncIteration:
                event = None
    finally:
        here.run(events.aclose())
        here.answers.give_back(slot)  # the key may start another answer


def failure_message(exc: Exception) -> str:
    """What a client is told of a failure after the status line was sent."""
    return client_message(exc) or "internal error while answering"
