"""docs/configuration.md documents every setting, with the default the code uses."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from ragsage.settings import PREFIX, Settings

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
HEADER = "| variable | default | what it does |"
ROW = re.compile(
    r"^\| `(?P<variable>RAGSAGE_[A-Z0-9_]+)` \| (?P<default>[^|]+?) \| (?P<what>.+) \|$"
)
EMPTY = "(empty)"

# Documented in the Observability table and proposed for settings.py with these
# defaults; once Settings has them they are checked like every other field.


def documented() -> dict[str, tuple[str, str]]:
    """Each variable in the reference tables: its default cell and its description."""
    rows: dict[str, tuple[str, str]] = {}
    in_table = False
    for number, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), start=1):
        if line == HEADER:
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
        if not in_table or line.startswith("| ---"):
            continue
        match = ROW.match(line)
        assert match, f"configuration.md:{number}: not a `| variable | default | what |` row"
        variable = match["variable"]
        assert variable not in rows, f"{variable} is documented twice"
        rows[variable] = (match["default"], match["what"].strip())
    return rows


def variables() -> dict[str, object]:
    return {PREFIX + spec.name.upper(): spec.default for spec in fields(Settings)}


def test_every_setting_is_documented() -> None:
    missing = sorted(set(variables()) - set(documented()))
    assert not missing, f"add these to docs/configuration.md: {', '.join(missing)}"


def test_every_documented_variable_is_a_setting() -> None:
    unknown = sorted(set(documented()) - set(variables()))
    assert not unknown, f"docs/configuration.md documents settings that do not exist: {unknown}"


def test_every_row_says_what_the_setting_does() -> None:
    short = [name for name, (_, what) in documented().items() if len(what.split()) < 3]
    assert not short


def test_settings_have_plain_defaults_the_doc_can_state() -> None:
    # A default_factory would not be visible here, and could not be written in one cell.
    assert all(spec.default is not MISSING for spec in fields(Settings))


@pytest.mark.parametrize("variable", sorted(documented()))
def test_the_documented_default_is_the_codes_default(variable: str) -> None:
    cell, _ = documented()[variable]
    known = variables()
    default = known[variable]
    if cell == EMPTY:
        assert default == "", f"{variable} defaults to {default!r}, documented as empty"
        return
    literal = re.fullmatch(r"`([^`]+)`", cell)
    assert literal, f"{variable}: write the default as `value` or {EMPTY}, not {cell!r}"
    raw = literal[1]
    if variable in known:
        if isinstance(default, str):
            # Text is what it says: compared as written, since a value like
            # RAGSAGE_EMBEDDER=auto is resolved when settings are built.
            assert raw == default, f"{variable}: documented {raw!r}, the code says {default!r}"
            return
        # Read the way the process reads it: the documented text as the variable's value.
        parsed = getattr(Settings.from_env({variable: raw}), variable.removeprefix(PREFIX).lower())
    else:
        parsed = {"true": True, "false": False}.get(raw, raw)
        if isinstance(default, int) and not isinstance(default, bool):
            parsed = int(raw)
    assert parsed == default and type(parsed) is type(default), (
        f"{variable}: documented {raw!r}, but the code's default is {default!r}"
    )
