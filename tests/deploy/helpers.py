"""Shared paths and parsers for the deployment checks."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from ragsage.settings import PREFIX, Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
SETTING_NAMES = frozenset(PREFIX + spec.name.upper() for spec in fields(Settings))
_ENV_LINE = re.compile(r"^\s*#?\s*([A-Z][A-Z0-9_]*)=(.*)$")


def env_example() -> dict[str, str]:
    """The variables `.env.example` sets (commented-out lines excluded)."""
    values = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        if line.startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if match:
            values[match.group(1)] = match.group(2)
    return values


def env_example_names() -> set[str]:
    """Every variable `.env.example` mentions, set or commented out."""
    names = set()
    for line in (REPO / ".env.example").read_text().splitlines():
        match = _ENV_LINE.match(line)
        if match:
            names.add(match.group(1))
    return names
