"""LLMClient over OpenAI chat completions: streamed answers, page transcription."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING

from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.core.pages import PageImage

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

TRANSCRIBE_INSTRUCTIONS = (
    "This image is one page of a document. Write out all of its text as Markdown, in reading "
    "order: keep headings as headings, lists as lists and tables as Markdown tables, and "
    "describe a chart or figure in one short sentence in brackets. Reply with the page's "
    "content only, with no preamble; reply with nothing if the page has no text."
)


class OpenAILLMClient:
    """LLMClient: token-by-token generation and vision transcription of pages.

    Generation streams from ``generation_model`` so each delta can be relayed to
    the caller as it arrives.  Transcription sends the page image inline (a
    base64 ``data:`` URL, so no upload or public URL is needed) to
    ``vision_model`` and returns the whole reply; its cap is separate because a
    dense page needs far more tokens than an answer.
    """

    def __init__(
        self,
        service: OpenAIService,
        *,
        generation_model: str = "gpt-4o",
        vision_model: str = "gpt-4o",
        generation_max_tokens: int | None = None,
        vision_max_tokens: int = 4096,
    ) -> None:
        self._service = service
        self._generation_model = generation_model
        self._vision_model = vision_model
        self._generation_max_tokens = generation_max_tokens
        self._vision_max_tokens = vision_max_tokens

    async def generate(self, prompt: str) -> AsyncGenerator[str, None]:
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": prompt}]
        stream = self._service.stream(
            messages,
            model=self._generation_model,
            max_tokens=self._generation_max_tokens,
            what=f"OpenAI generation ({self._generation_model})",
        )
        # Closing this generator early must close the HTTP stream now, not at GC.
        async with aclosing(stream) as deltas:
            async for text in deltas:
                yield text

    async def transcribe(self, image: PageImage) -> str:
        encoded = base64.b64encode(image.data).decode("ascii")
        messages: list[ChatCompletionMessageParam] = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": TRANSCRIBE_INSTRUCTIONS},
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": f"data:{image.media_type};base64,{encoded}",
                            "detail": "high",
                        },
                    },
                ],
            }
        ]
        reply = await self._service.complete(
            messages,
            model=self._vision_model,
            max_tokens=self._vision_max_tokens,
            what=f"OpenAI vision transcription ({self._vision_model})",
        )
        return reply.strip()
