"""The term rewriter: a follow-up question carries its conversation's words."""

from __future__ import annotations

from collections.abc import Sequence

from ragsage.core.conversations import Turn
from ragsage.core.text import terms


class TermRewriter:
    """Makes a follow-up standalone by appending earlier user turns' content words.

    A model would resolve "its price" to "the Pro plan's price"; appending the
    words said earlier gets the overlap-based retrieval to the same passage.
    """

    def __init__(self, *, max_added_terms: int = 12) -> None:
        self.max_added_terms = max_added_terms

    async def rewrite(self, question: str, history: Sequence[Turn]) -> str:
        if not history:
            return question
        present = set(terms(question))
        added: list[str] = []
        for turn in reversed(history):
            if turn.role != "user":
                continue
            for word in turn.content.split():
                term = terms(word)
                if term and term[0] not in present and len(added) < self.max_added_terms:
                    present.add(term[0])
                    added.append(word.strip(".,;:!?\"'()[]"))
        return f"{question} {' '.join(added)}".strip() if added else question
