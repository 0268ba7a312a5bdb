"""Questions, retrieval, chunks and sources: read access to the knowledge base."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from flask import Blueprint, Response, request

from api import answer_stream, convert, costs
from api.auth import narrowed, require, run_checked
from api.documented import documented, ok, query_int
from api.errors import ApiError
from api.routes.common import int_arg, json_body
from api.schemas.query import (
    ChunkResponse,
    QueryRequest,
    QueryResponse,
    SearchRequest,
    SearchResponse,
    SourcesResponse,
)
from api.services import Services, on_replicas, services, stream_on_replicas
from ragsage.core.conversations import Turn
from ragsage.core.keys import Role
from ragsage.query import (
    AnswerEvent,
    CitationsEvent,
    DoneEvent,
    QueryEngine,
    RetrievalResult,
    TokenEvent,
)
from ragsage.query.options import MAX_EXPANSION

blueprint = Blueprint("query", __name__)
# Each Server-Sent Event: its name, and a JSON payload in ``data``.
SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["token", "citations", "done", "error"]},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}


@blueprint.post("/v1/search")
@documented("Ranked passages for a query", ok(SearchResponse), body=SearchRequest)
def search() -> Any:
    who = require(Role.READ)
    body = json_body(SearchRequest)
    here = services()
    options = narrowed(who, body.to_options())
    costs.check_options(here.settings, options)
    here.search_timeout(who.scope)

    async def found(engine: QueryEngine) -> RetrievalResult:
        return await engine.search(who.scope, body.query, options)

    searched = run_checked(on_replicas(here.runtime.with_engine(who.scope, found)))
    return convert.dump(convert.search(searched))


@blueprint.post("/v1/query")
@documented(
    "A cited answer (JSON, or Server-Sent Events with stream=true)",
    ok(
        QueryResponse,
        description="the answer",
        also={"text/event-stream": {"schema": SSE_EVENT}},
    ),
    body=QueryRequest,
)
def query() -> Any:
    who = require(Role.READ)
    body = json_body(QueryRequest)
    here = services()
    history = [Turn(turn.role, turn.content) for turn in body.history]
    options = narrowed(who, body.options.to_options())
    costs.check_history(here.settings, len(history))
    costs.check_options(here.settings, options)
    here.search_timeout(who.scope)
    engine = here.run(here.runtime.query_engine_for(who.scope))
    if body.stream or request.accept_mimetypes.best == "text/event-stream":
        slot = here.answers.take(who.holder)
        events = stream_on_replicas(
            engine.stream_answer(who.scope, body.question, history=history, options=options)
        )
        first = answer_stream.opened(here, events, slot)
        return Response(
            _sse(here, events, first, slot),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    with here.answers.held(who.holder):
        answer = here.run(
            on_replicas(engine.answer(who.scope, body.question, history=history, options=options))
        )
    return convert.dump(
        QueryResponse(
            answer=answer.text,
            citations=[convert.citation(c) for c in answer.citations],
            not_found=answer.not_found,
            small_talk=answer.small_talk,
            query=answer.query,
            timing_ms=dict(answer.timing_ms),
        )
    )


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _sse(
    here: Services,
    events: AsyncGenerator[AnswerEvent, None],
    first: AnswerEvent | None,
    slot: str | None = None,
) -> Iterator[str]:
    """Relay engine events as Server-Sent Events, one at a time, as they arrive.

    A failure mid-stream becomes an ``error`` event, because the status line
    has already been sent.
    """
    try:
        for event in answer_stream.relayed(here, events, first, slot):
            if isinstance(event, TokenEvent):
                yield _event("token", {"text": event.text})
            elif isinstance(event, CitationsEvent):
                yield _event(
                    "citations", [convert.citation(c).model_dump() for c in event.citations]
                )
            elif isinstance(event, DoneEvent):
                yield _event(
                    "done",
                    {
                        "answer": event.answer,
                        "not_found": event.not_found,
                        "small_talk": event.small_talk,
                        "query": event.query,
                        "timing_ms": event.timing_ms,
                    },
                )
    except Exception as exc:  # noqa: BLE001 - the client must hear that the stream ended badly
        yield _event("error", {"message": answer_stream.failure_message(exc)})


@blueprint.get("/v1/chunks/<path:chunk_id>")
@documented(
    "A chunk and its neighbours",
    ok(ChunkResponse),
    query=(query_int("above", 0, MAX_EXPANSION), query_int("below", 0, MAX_EXPANSION)),
)
def fetch_chunk(chunk_id: str) -> Any:
    who = require(Role.READ)
    above = int_arg("above", 0, 0, MAX_EXPANSION)
    below = int_arg("below", 0, 0, MAX_EXPANSION)
    here = services()
    found = here.run(
        on_replicas(
            here.runtime.query_engine().fetch_chunk(
                who.scope, chunk_id, chunks_above=above, chunks_below=below, filters=who.filters
            )
        )
    )
    if found is None:
        raise ApiError(404, "not_found", f"no chunk {chunk_id!r}")
    return convert.dump(
        ChunkResponse(
            chunk=convert.chunk(found.chunk),
            above=[convert.chunk(c) for c in found.above],
            below=[convert.chunk(c) for c in found.below],
        )
    )


@blueprint.get("/v1/sources")
@documented("The namespace's document sources", ok(SourcesResponse))
def sources() -> Any:
    who = require(Role.READ)
    here = services()
    listed = here.run(on_replicas(here.runtime.query_engine().list_sources(who.scope, who.filters)))
    return convert.dump(SourcesResponse(sources=listed))
