"""What the reference page tests index: the example documents and a small handbook."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "docs"

HANDBOOK = """# Handbook

## Uploads

Failed uploads are retried three times with exponential backoff before the job is marked
as failed and the operator is paged.

## Holidays

Every employee receives 28 days of paid holiday per year, requested two weeks ahead.

## Security

Laptops use full-disk encryption; a lost device is reported within one hour.
"""
