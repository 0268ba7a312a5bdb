"""An OpenAI-compatible chat endpoint over the same grounded answers as /v1/query.

Chat tools (Open WebUI, LibreChat, the ``openai`` package) send a conversation
to ``POST /v1/chat/completions`` with the ragsage API key as their Bearer
token; the last user message is the question, the earlier turns its history.
The answer keeps its ``[n]`` markers, gains a short Sources list (unless asked
not to), and carries the citations as data beside OpenAI's own fields.
Errors use OpenAI's error object.  docs/chat.md has the client settings.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response

from api import answer_stream, convert, costs
from api.auth import narrowed, require
from api.documented import documented, ok
from api.errors import ApiError
from api.routes.common import json_body
from api.schemas import chat as shapes
from api.services import Services, on_replicas, services, stream_on_replicas
from ragsage.adapters.parsing.tokens import TokenTally, make_token_counter
from ragsage.core.conversations import Turn
from ragsage.core.keys import Principal, Role
from ragsage.query import AnswerEvent, Citation, CitationsEvent, DoneEvent, TokenEvent
from ragsage.query.options import RetrievalOptions

blueprint = Blueprint("chat", __name__)
# OpenAI's error "type" for each status the endpoint answers with.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
_STARTED = int(time.time())
# Usage is counted in cl100k_base, the encoding chunk budgets use (its file loads on first use).
_COUNT = make_token_counter()
CHAT_ERRORS = (400, 401, 403, 404, 413, 415, 429, 503)


@blueprint.after_request
def _openai_errors(response: Response) -> Response:
    """Every error of this blueprint in OpenAI's shape: {error: {message, type, param, code}}."""
    if response.status_code < 400 or not response.is_json:
        return response
    body = response.get_json(silent=True) or {}
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or "type" in error:
        return response
    status = response.status_code
    code = error.get("code")
    if status == 401:
        code = "invalid_api_key"
    elif status == 422:
        # OpenAI answers a malformed body with 400; its clients raise BadRequestError for it.
        response.status_code = status = 400
    details = error.get("details") or []
    param = details[0].get("location") if details and isinstance(details[0], dict) else None
    response.set_data(
        json.dumps(
            {
                "error": {
                    "message": error.get("message", ""),
                    "type": _ERROR_TYPES.get(status, "api_error"),
                    "param": param,
                    "code": code,
                }
            }
        )
    )
    return response


@blueprint.get("/v1/models")
@documented("The models a chat client may name (OpenAI's shape)", ok(shapes.ModelList))
def models() -> Any:
    require(Role.READ)
    return convert.dump(
        shapes.ModelList(
            data=[shapes.ModelOut(id=shapes.CHAT_MODEL, created=_STARTED, owned_by="ragsage")]
        )
    )


@dataclass
class _Reply:
    """An answer as it is relayed: its text so far, and what the end brings."""

    text: str = ""
    citations: tuple[Citation, ...] = ()
    not_found: bool = False
    finish: str = "stop"
    # The text's tokens, kept as it grows: a max_tokens check per streamed token
    # must not encode the whole reply again each time.
    tokens: TokenTally = field(default_factory=lambda: TokenTally(_COUNT))

    def add(self, more: str) -> None:
        self.text += more
        self.tokens.append(more)


@blueprint.post("/v1/chat/completions")
@documented(
    "A cited answer to the conversation's last user message, in OpenAI's chat completion "
    "shape (Server-Sent Events chunks with stream=true)",
    ok(
        shapes.ChatCompletion,
        description="the answer",
        also={"text/event-stream": {"schema": {"type": "string"}}},
    ),
    body=shapes.ChatCompletionRequest,
    errors=CHAT_ERRORS,
)
def completions() -> Any:
    who = require(Role.READ)
    body = json_body(shapes.ChatCompletionRequest)
    here = services()
    question, history = _conversation(body)
    costs.check_history(here.settings, len(history))
    options = narrowed(who, RetrievalOptions())
    costs.check_options(here.settings, options)
    here.search_timeout(who.scope)
    limit = body.max_completion_tokens or body.max_tokens
    with_sources = here.settings.chat_sources if body.sources is None else body.sources
    chat = _Chat(here, who, question, history, options, limit, with_sources, body)
    if body.stream:
        return chat.stream()
    return chat.complete()


def _conversation(body: shapes.ChatCompletionRequest) -> tuple[str, list[Turn]]:
    """The question (the last message, the user's) and the turns before it."""
    if body.model != shapes.CHAT_MODEL:
        raise ApiError(
            404,
            "model_not_found",
            f"the model {body.model!r} does not exist; this server answers as "
            f"{shapes.CHAT_MODEL!r} (GET /v1/models)",
        )
    if body.tools or body.functions:
        raise ApiError(
            400,
            "unsupported_parameter",
            "tools are not supported: ragsage answers from its documents",
        )
    if body.n is not None and body.n > 1:
        raise _unsupported("n greater than 1 is not supported")
    turns: list[Turn] = []
    for message in body.messages:
        if message.role in ("system", "developer"):
            continue  # answers are grounded in the documents, whatever a prompt asks
        if message.role not in ("user", "assistant"):
            raise ApiError(
                400, "unsupported_parameter", f"{message.role} messages are not supported"
            )
        turns.append(Turn(message.role, _text(message)))
    if not turns or turns[-1].role != "user" or not turns[-1].content.strip():
        raise ApiError(400, "invalid_request", "the last message must be the user's question")
    return turns[-1].content, turns[:-1]


def _unsupported(message: str) -> ApiError:
    return ApiError(400, "unsupported_parameter", message)


def _text(message: shapes.ChatMessage) -> str:
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    parts = []
    for part in message.content:
        if part.type != "text":
            raise ApiError(
                400, "unsupported_parameter", f"{part.type} content is not supported; send text"
            )
        parts.append(part.text or "")
    return "\n".join(parts)


class _Chat:
    """One request's answer, relayed whole or as chunks."""

    def __init__(
        self,
        here: Services,
        who: Principal,
        question: str,
        history: list[Turn],
        options: RetrievalOptions,
        limit: int | None,
        with_sources: bool,
        body: shapes.ChatCompletionRequest,
    ) -> None:
        self.here, self.who, self.question, self.history = here, who, question, history
        self.options, self.limit, self.with_sources = options, limit, with_sources
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.include_usage = bool(body.stream_options and body.stream_options.include_usage)
        self.prompt = "\n".join(turn.content for turn in (*history, Turn("user", question)))
        self.engine = here.run(here.runtime.query_engine_for(who.scope))

    def _events(self) -> AsyncGenerator[AnswerEvent, None]:
        return self.engine.stream_answer(
            self.who.scope, self.question, history=self.history, options=self.options
        )

    def _take(self, reply: _Reply, event: AnswerEvent) -> list[str]:
        """What the event adds to the answer's text (nothing once the token limit is hit)."""
        if isinstance(event, CitationsEvent):
            reply.citations = event.citations
        elif isinstance(event, DoneEvent):
            reply.not_found = event.not_found
        elif isinstance(event, TokenEvent) and reply.finish == "stop":
            if self.limit is not None and reply.tokens.within(event.text, self.limit) > self.limit:
                reply.finish = "length"
                return []
            reply.add(event.text)
            return [event.text]
        return []

    def _sources(self, reply: _Reply) -> str:
        if not self.with_sources or not reply.citations or reply.finish != "stop":
            return ""
        lines = [f"[{c.number}] {_place(c)}" for c in reply.citations]
        return "\n\nSources:\n" + "\n".join(lines)

    def _usage(self, reply: _Reply) -> shapes.Usage:
        prompt, completion = _COUNT(self.prompt), reply.tokens.within("", sys.maxsize)
        return shapes.Usage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        )

    def complete(self) -> Response:
        reply = _Reply()
        with self.here.answers.held(self.who.holder):
            self.here.run(on_replicas(self._collect(reply)))
        reply.add(self._sources(reply))
        return convert.dump(
            shapes.ChatCompletion(
                id=self.id,
                created=self.created,
                model=shapes.CHAT_MODEL,
                choices=[
                    shapes.ChatChoice(
                        index=0,
                        message=shapes.ChatAnswer(content=reply.text),
                        finish_reason="length" if reply.finish == "length" else "stop",
                    )
                ],
                usage=self._usage(reply),
                citations=[convert.citation(c) for c in reply.citations],
                not_found=reply.not_found,
            )
        )

    async def _collect(self, reply: _Reply) -> None:
        events = self._events()
        try:
            async for event in events:
                self._take(reply, event)
        finally:
            await events.aclose()

    def stream(self) -> Response:
        slot = self.here.answers.take(self.who.holder)
        events = stream_on_replicas(self._events())
        first = answer_stream.opened(self.here, events, slot)
        return Response(
            self._chunks(events, first, slot),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> str:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": shapes.CHAT_MODEL,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n"

    def _delta(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return self._chunk([{"index": 0, "delta": delta, "finish_reason": finish}], **extra)

    def _chunks(
        self, events: AsyncGenerator[AnswerEvent, None], first: AnswerEvent | None, slot: str | None
    ) -> Iterator[str]:
        reply = _Reply()
        try:
            yield self._delta({"role": "assistant", "content": ""})
            for event in answer_stream.relayed(self.here, events, first, slot):
                for piece in self._take(reply, event):
                    yield self._delta({"content": piece})
            sources = self._sources(reply)
            if sources:
                yield self._delta({"content": sources})
            reply.add(sources)
            usage = self._usage(reply).model_dump()
            yield self._delta(
                {},
                "length" if reply.finish == "length" else "stop",
                citations=[convert.citation(c).model_dump() for c in reply.citations],
                not_found=reply.not_found,
                usage=usage,
            )
            if self.include_usage:
                yield self._chunk([], usage=usage)
            yield "data: [DONE]\n\n"
        except Exception as exc:  # noqa: BLE001 - the client must hear that the stream ended badly
            failure = {"message": answer_stream.failure_message(exc), "type": "api_error"}
            yield f"data: {json.dumps({'error': failure})}\n\n"


def _place(citation: Citation) -> str:
    where = citation.source or citation.title
    if citation.heading_path:
        where += " — " + " > ".join(citation.heading_path)
    if citation.page_numbers:
        pages = ", ".join(str(p) for p in citation.page_numbers)
        where += f" (p. {pages})"
    return where
