"""The bounds every retrieval tool holds a model's arguments to, and the error for a miss.

Kept apart from :mod:`ragsage.agent.tools` and :mod:`ragsage.agent.tool_arguments`
so each can read them without importing the other: the tools load the
(pydantic) argument models only when they are built.
"""

from __future__ import annotations

MAX_TOOL_TOP_K = 20
MAX_TOOL_NEIGHBOURS = 5


class ArgumentError(ValueError):
    """The model's arguments do not fit the tool's schema."""
