"""OpenAI's chat completion shapes, as far as ragsage speaks them (docs/chat.md).

Requests are read leniently, as OpenAI reads them: fields this endpoint does
not use are ignored, not refused; what it cannot honour (tools, several
choices) is refused by the route with a 400 naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.query import CitationOut
from ragsage.query.options import MAX_QUERY_CHARS

CHAT_MODEL = "ragsage"
# A conversation longer than this is refused before it is read (RAGSAGE_MAX_HISTORY_TURNS
# bounds what reaches the engine).
MAX_MESSAGES = 128


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Lenient):
    type: str = Field(max_length=64)
    text: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)


class ChatMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = Field(default=None)


class StreamOptions(_Lenient):
    include_usage: bool = False


class ChatCompletionRequest(_Lenient):
    """OpenAI's request body; `messages` ends with the user's question."""

    model: str = Field(max_length=256, description=f"`{CHAT_MODEL}` (see GET /v1/models).")
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    n: int | None = Field(default=None, ge=1, le=128)
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    user: str | None = Field(
        default=None, max_length=256, description="Ignored: who asks comes from the API key."
    )
    sources: bool | None = Field(
        default=None,
        description="ragsage's own: append a short Sources list to the answer text "
        "(default: RAGSAGE_CHAT_SOURCES). The citations field carries them either way.",
    )


class ChatAnswer(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class ChatChoice(BaseModel):
    index: int
    message: ChatAnswer
    finish_reason: Literal["stop", "length"]


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    citations: list[CitationOut] = Field(
        description="ragsage's own: the passages the [n] markers point at."
    )
    not_found: bool = Field(description="ragsage's own: the documents hold no answer.")


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]
