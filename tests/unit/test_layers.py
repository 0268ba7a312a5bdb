"""The layers of docs/architecture.md, enforced on the import graph of the source.

Every ``import`` and ``from ... import`` in ``ragsage/``, ``api/`` and
``worker/`` is read with :mod:`ast` (inside functions too: a lazy import is
still a dependency) and each edge is checked against the table below.  Edges
that break a rule today are listed in ``KNOWN`` with the reason; the test
fails on any edge not listed, and on a listed edge that no longer exists, so
the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ragsage", "api", "worker")

# Longest prefix wins.
LAYERS: dict[str, str] = {
    "ragsage.core": "core",
    "ragsage.ingestion": "service",
    "ragsage.query": "service",
    "ragsage.jobs": "application",  # runs jobs under a Runtime, on the Postgres job tables
    "ragsage.evaluation": "service",
    "ragsage.adapters": "adapter",
    "ragsage.settings": "runtime",  # read by the composition root, validated against the catalogues
    "ragsage.runtime": "runtime",
    "ragsage.testing": "testing",
    "ragsage.cli": "entry",
    "ragsage.library": "entry",
    "ragsage.agent": "entry",
    "ragsage.moved": "entry",
    "ragsage": "entry",  # the package's own __init__: the public names
    "api": "entry",
    "worker": "entry",
}

# What each layer may import, besides itself.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "service": frozenset({"core"}),
    "adapter": frozenset({"core"}),
    "runtime": frozenset({"core", "service", "adapter"}),
    "application": frozenset({"core", "service", "adapter", "runtime"}),
    "testing": frozenset({"core", "service", "adapter", "runtime", "application"}),
    "entry": frozenset({"core", "service", "adapter", "runtime", "application"}),
}

# Exceptions, by (importer, imported) module → the reason and what would remove
# it.  Empty today; an entry must say why, and the test fails once it is mended.
KNOWN: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> str | None:
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return LAYERS[best] if best else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def import_graph() -> set[tuple[str, str]]:
    edges = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            importer = module_name(path)
            for imported in imports_of(path.read_text(encoding="utf-8")):
                if imported.split(".")[0] in PACKAGES:
                    edges.add((importer, imported))
    return edges


def violations(edges: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges that break the layer table, or import the worker from the API."""
    broken = set()
    for importer, imported in edges:
        if importer.split(".")[0] == "api" and imported.split(".")[0] == "worker":
            broken.add((importer, imported))
            continue
        source, target = layer_of(importer), layer_of(imported)
        if source is None or target is None or source == target:
            continue
        if target not in MAY_IMPORT[source]:
            broken.add((importer, imported))
    return broken


def test_every_module_belongs_to_a_layer() -> None:
    assert [m for m, _ in import_graph() if layer_of(m) is None] == []


def test_no_import_breaks_the_layers_beyond_the_known_exceptions() -> None:
    found = violations(import_graph())
    assert sorted(found - KNOWN.keys()) == [], "a new import across the layers"
    assert sorted(KNOWN.keys() - found) == [], "mended: take it off KNOWN"


def test_a_deliberate_violation_is_caught() -> None:
    edges = import_graph() | {
        ("ragsage.core.types", "ragsage.adapters.postgres"),  # core reaching an adapter
        ("ragsage.query.engine", "ragsage.runtime"),  # a service reaching the root
        ("ragsage.adapters.redis", "ragsage.query"),  # an adapter reaching a service
        ("ragsage.runtime", "api"),  # the root reaching an entry point
        ("api.routes.documents", "worker.tasks"),  # the API loading the worker
        ("ragsage.ingestion.pipeline", "ragsage.testing"),  # a service building a double
        ("ragsage.runtime.container", "ragsage.jobs.runner"),  # the root reaching a job
        ("ragsage.adapters.postgres.jobs.store", "ragsage.jobs.runner"),  # SQL reaching a job
        ("ragsage.query.engine", "ragsage.adapters.postgres"),  # a service reaching SQL
    }
    new = violations(edges) - KNOWN.keys()
    assert new == {
        ("ragsage.core.types", "ragsage.adapters.postgres"),
        ("ragsage.query.engine", "ragsage.runtime"),
        ("ragsage.adapters.redis", "ragsage.query"),
        ("ragsage.runtime", "api"),
        ("api.routes.documents", "worker.tasks"),
        ("ragsage.ingestion.pipeline", "ragsage.testing"),
        ("ragsage.runtime.container", "ragsage.jobs.runner"),
        ("ragsage.adapters.postgres.jobs.store", "ragsage.jobs.runner"),
        ("ragsage.query.engine", "ragsage.adapters.postgres"),
    }


def test_adapters_of_one_technology_do_not_reach_into_another() -> None:
    crossing = sorted(
        (importer, imported)
        for importer, imported in import_graph()
        if layer_of(importer) == layer_of(imported) == "adapter"
        and importer.split(".")[2] != imported.split(".")[2]
    )
    assert crossing == [], "adapters import core and their own vendor SDK only"
