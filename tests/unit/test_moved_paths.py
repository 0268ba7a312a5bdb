"""Modules that moved still import from their old paths for a release, with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsage.moved import MOVED, new_name

from .fresh_python import run_fresh

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_moved_module_and_says_where_it_went(old: str) -> None:
    probe = (
        "import importlib, warnings; warnings.simplefilter('always'); "
        f"old = importlib.import_module({old!r}); new = importlib.import_module({MOVED[old]!r}); "
        "print(old is new, new.__spec__.name)"
    )
    out = run_fresh(probe)
    assert out.stdout.split() == ["True", MOVED[old]]
    assert f"{old} has moved to {MOVED[old]}" in out.stderr


@pytest.mark.parametrize("old", sorted(MOVED))
def test_nothing_is_left_at_an_old_path(old: str) -> None:
    place = ROOT / Path(*old.split("."))
    assert not place.with_suffix(".py").exists() and not place.is_dir()


def test_a_module_under_a_moved_name_maps_below_its_new_home() -> None:
    assert new_name("ragsage.types") == "ragsage.core.types"
    assert new_name("ragsage.typesetting") is None
    assert new_name("ragsage.query.engine") is None
