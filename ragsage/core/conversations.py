"""A conversation's messages, as the query rewriter reads them to resolve a follow-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, for rewriting follow-up questions."""

    role: Literal["user", "assistant"]
    content: str
