from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsage import RAG

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "docs"

HANDBOOK = """# Employee handbook

## Holidays

Every employee receives 28 days of paid holiday per year. Unused holiday days may be
carried over into the first quarter of the next year, up to a maximum of five days.

## Expenses

Travel expenses are reimbursed within 14 days when the receipt is uploaded to the
finance portal. Meals abroad are covered up to 40 euros per day.

## Security

Laptops must use full-disk encryption. Report a lost device to the security desk
within one hour, day or night.
"""


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
