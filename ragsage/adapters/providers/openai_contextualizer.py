"""Contextualizer that asks a cheap OpenAI model to situate each chunk."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

DOCUMENT_PREAMBLE = "Passages will be taken from the following document."
CONTEXT_INSTRUCTIONS = (
    "The passage above comes from the document. In one or two sentences, say where it sits "
    "in the document and what it is about, naming the entities, dates or sections it relies "
    "on, so that a search over isolated passages can still find it. Reply with those "
    "sentences only."
)


class OpenAIContextualizer:
    """Contextualizer: a short situating context from a cheap model, then the chunk.

    The whole document goes in the system message and only the chunk in the user
    message, so every chunk of one document shares the same long prompt prefix
    and OpenAI's automatic prompt caching serves it after the first call.  A
    document too long for that (``max_document_chars``) is cut to a window around
    the chunk instead: costlier, as the prefix then differs, but it still fits.
    The text returned is the context followed by the chunk verbatim; when the
    model says nothing, the chunk alone.
    """

    def __init__(
        self,
        service: OpenAIService,
        *,
        model: str = "gpt-4o-mini",
        max_tokens: int = 128,
        max_document_chars: int = 300_000,
    ) -> None:
        self._service = service
        self._model = model
        self._max_tokens = max_tokens
        self._max_document_chars = max_document_chars

    async def contextualize(self, document: Document, chunk: Chunk, *, full_text: str) -> str:
        view = document_view(full_text, chunk.text, self._max_document_chars)
        messages: list[ChatCompletionMessageParam] = [
            {
                "role": "system",
                "content": f"{DOCUMENT_PREAMBLE}\n\n<document>\n{view}\n</document>",
            },
            {
                "role": "user",
                "content": f"<passage>\n{chunk.text}\n</passage>\n\n{CONTEXT_INSTRUCTIONS}",
            },
        ]
        context = await self._service.complete(
            messages,
            model=self._model,
            max_tokens=self._max_tokens,
            what=f"OpenAI contextualizing ({self._model})",
        )
        context = context.strip()
        return f"{context}\n\n{chunk.text}" if context else chunk.text


def document_view(full_text: str, chunk_text: str, limit: int) -> str:
    """``full_text``, or the ``limit`` characters of it centred on the chunk."""
    if len(full_text) <= limit:
        return full_text
    found = full_text.find(chunk_text[:200].strip())
    centre = found + len(chunk_text) // 2 if found >= 0 else 0
    start = max(0, min(centre - limit // 2, len(full_text) - limit))
    return full_text[start : start + limit]
