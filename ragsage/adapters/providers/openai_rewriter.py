"""QueryRewriter that asks a cheap OpenAI model for a standalone question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.core.conversations import Turn

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

REWRITE_INSTRUCTIONS = (
    "You turn the last question of a conversation into a question that makes sense on its "
    "own. Replace pronouns and references with what they refer to in the conversation, keep "
    "the question's language and intent, and do not answer it. Reply with the rewritten "
    "question only."
)
_TURN_CHARS = 1000


class OpenAIQueryRewriter:
    """QueryRewriter: resolves a follow-up against recent turns with a cheap model.

    With no history there is nothing to resolve: the question comes back as is
    and no call is made.  Only the last ``max_turns`` turns are sent, each cut to
    a bounded length, so a long conversation does not grow the cost of every
    question.  An empty reply falls back to the original question rather than
    retrieving on nothing.
    """

    def __init__(
        self,
        service: OpenAIService,
        *,
        model: str = "gpt-4o-mini",
        max_tokens: int = 256,
        max_turns: int = 8,
    ) -> None:
        self._service = service
        self._model = model
        self._max_tokens = max_tokens
        self._max_turns = max_turns

    async def rewrite(self, question: str, history: Sequence[Turn]) -> str:
        if not history:
            return question
        transcript = "\n".join(
            f"{'User' if turn.role == 'user' else 'Assistant'}: {_short(turn.content)}"
            for turn in history[-self._max_turns :]
        )
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": REWRITE_INSTRUCTIONS},
            {
                "role": "user",
                "content": f"Conversation:\n{transcript}\n\nLast question: {question}",
            },
        ]
        reply = await self._service.complete(
            messages,
            model=self._model,
            max_tokens=self._max_tokens,
            what=f"OpenAI query rewriting ({self._model})",
        )
        rewritten = reply.strip().strip("\"'“”").strip()
        return rewritten or question


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _TURN_CHARS else flat[: _TURN_CHARS - 1] + "…"
