from __future__ import annotations

import inspect
from pathlib import Path

from mypy import api as mypy_api

from ragsage.core import ports
from ragsage.testing import all_fakes

CONFORMANCE = Path(__file__).with_name("fakes_conform.py")


def _port_protocols() -> set[str]:
    return {
        name
        for name, value in vars(ports).items()
        if inspect.isclass(value)
        and getattr(value, "_is_protocol", False)
        and value.__module__ == ports.__name__
    }


def test_there_is_exactly_one_fake_per_port() -> None:
    fakes = list(all_fakes())
    # Spans come from the tracer, not alone; the others are optional capabilities
    # (of a Contextualizer, of the stores) with a fallback to the plain port.
    optional = {
        "PageContextualizer",
        "RanksVectors",
        "RanksText",
        "FetchesChunks",
        "PagePositionsReader",
    }
    protocols = _port_protocols() - {"Span", *optional}
    # The stores are the in-memory adapters (Memory*), the rest test doubles (Fake*).
    names = sorted(fake.__name__.removeprefix("Fake").removeprefix("Memory") for fake in fakes)
    assert names == sorted(protocols)
    assert len(fakes) == len(protocols)


def test_the_conformance_module_names_every_port() -> None:
    source = CONFORMANCE.read_text()
    for name in _port_protocols():
        assert f"ports.{name}" in source, name


def test_mypy_accepts_each_fake_as_its_protocol() -> None:
    # Imports are followed as `make typecheck` follows them, so the cache that
    # step leaves is reused and only the conformance module is checked afresh
    # (4 s instead of 21 s with imports silenced, which changes every module's options).
    stdout, stderr, status = mypy_api.run(["--strict", "--no-error-summary", str(CONFORMANCE)])
    assert status == 0, stdout + stderr
