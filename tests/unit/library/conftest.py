from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsage import RAG

from ..engine.conftest import HANDBOOK as HANDBOOK

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "docs"


@pytest.fixture
def rag() -> Iterator[RAG]:
    with RAG.default() as built:
        yield built


def numbered_sections(count: int, words: int = 60) -> str:
    """A Markdown document of ``count`` sections, each about one distinct topic word."""
    return "\n\n".join(
        f"## Section {n}\n\n" + " ".join(f"topic{n} detail{n}_{w}" for w in range(words))
        for n in range(count)
    )
