"""Recognising conversational messages that need no retrieval."""

from __future__ import annotations

from ragsage.core.text import words

_GREETINGS = frozenset(
    """
    hi hello hey hiya howdy yo greetings morning afternoon evening good thanks thank thx
    ty cheers bye goodbye ok okay cool great nice awesome perfect you how are is it going
    doing what's whats up sup there all well fine i'm im am appreciate much very lot so
    see later night day welcome np no problem great super a the again bot assistant
    """.split()
)
_MUST_HAVE_ONE = frozenset(
    "hi hello hey hiya howdy yo greetings morning afternoon evening thanks thank thx ty "
    "cheers bye goodbye sup".split()
)


def is_small_talk(message: str) -> bool:
    """True for greetings, thanks and goodbyes that carry no question to look up.

    Deliberately narrow: every word must be conversational and at least one must
    be a greeting, thanks or farewell, so "hello, what is the refund policy?"
    still goes to retrieval.
    """
    tokens = words(message)
    if not tokens or len(tokens) > 8:
        return False
    return all(t in _GREETINGS for t in tokens) and any(t in _MUST_HAVE_ONE for t in tokens)
