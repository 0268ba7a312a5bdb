"""The layers of docs/architecture.md, enforced on the import graph of the source.

Every ``import`` and ``from ... import`` in ``ragsage/``, ``api/``,
``worker/`` and ``evaluation_data/`` is read with :mod:`ast` (inside functions too: a lazy import is
still a dependency) and each edge is checked against the table below.  Edges
that break a rule today are listed in ``KNOWN`` with the reason; the test
fails on any edge not listed, and on a listed edge that no longer exists, so
the list only shrinks.

The same graph, with ``from package import module`` read as an edge to that
module, must hold no circle: two modules that import each other (even lazily,
even only for type checking) are one module cut in the wrong place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ragsage", "api", "worker", "evaluation_data")

# Longest prefix wins.
LAYERS: dict[str, str] = {
    "ragsage.core": "core",
    "ragsage.ingestion": "service",
    "ragsage.query": "service",
    "ragsage.management": "service",
    "ragsage.jobs": "application",  # runs jobs under a Runtime, on the Postgres job tables
    "ragsage.evaluation": "service",
    "ragsage.adapters": "adapter",
    "ragsage.settings": "runtime",  # read by the composition root, validated against the catalogues
    "ragsage.runtime": "runtime",
    "ragsage.testing": "testing",
    "ragsage.cli": "entry",
    "ragsage.library": "entry",
    "ragsage.agent": "entry",
    "ragsage.fakes": "testing",  # the documented path of ragsage.testing
    "ragsage": "entry",  # the package's own __init__: the public names
    "api": "entry",
    "worker": "entry",
    "evaluation_data": "tool",  # the dataset builders: the checkout's, never the engine's
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
    "tool": frozenset({"core", "service", "adapter", "runtime", "application"}),
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


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
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


def module_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Each module under ``root``'s ``packages`` → the modules of those packages it imports.

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``.
    """
    paths = {
        module_name(p, root): p for package in packages for p in (root / package).rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for importer, path in paths.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    whole = f"{node.module}.{alias.name}"
                    imported.add(whole if whole in paths else node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        graph[importer] = {m for m in imported if m in paths and m != importer}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = list(graph[start])
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            pending.extend(graph[module])
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that reach one another through their imports, sorted."""
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {
        frozenset({module, *(other for other in reach[module] if module in reach[other])})
        for module in graph
        if module in reach[module]
    }
    return sorted(sorted(group) for group in groups)


def test_every_module_belongs_to_a_layer() -> None:
    assert [m for m, _ in import_graph() if layer_of(m) is None] == []


def test_no_import_breaks_the_layers_beyond_the_known_exceptions() -> None:
    found = violations(import_graph())
    assert sorted(found - KNOWN.keys()) == [], "a new import across the layers"
    assert sorted(KNOWN.keys() - found) == [], "mended: take it off KNOWN"


def test_a_deliberate_violation_is_caught() -> None:
    edges = import_graph() | {
        ("ragsage.core.scopes", "ragsage.adapters.postgres"),  # core reaching an adapter
        ("ragsage.query.engine", "ragsage.runtime"),  # a service reaching the root
        ("ragsage.adapters.redis", "ragsage.query"),  # an adapter reaching a service
        ("ragsage.runtime", "api"),  # the root reaching an entry point
        ("api.routes.documents", "worker.tasks"),  # the API loading the worker
        ("ragsage.ingestion.pipeline", "ragsage.testing"),  # a service building a double
        ("ragsage.runtime.container", "ragsage.jobs.runner"),  # the root reaching a job
        ("ragsage.adapters.postgres.jobs.store", "ragsage.jobs.runner"),  # SQL reaching a job
        ("ragsage.query.engine", "ragsage.adapters.postgres"),  # a service reaching SQL
        ("ragsage.evaluation.writing", "evaluation_data.code_questions"),  # the engine on a tool
    }
    new = violations(edges) - KNOWN.keys()
    assert new == {
        ("ragsage.core.scopes", "ragsage.adapters.postgres"),
        ("ragsage.query.engine", "ragsage.runtime"),
        ("ragsage.adapters.redis", "ragsage.query"),
        ("ragsage.runtime", "api"),
        ("api.routes.documents", "worker.tasks"),
        ("ragsage.ingestion.pipeline", "ragsage.testing"),
        ("ragsage.runtime.container", "ragsage.jobs.runner"),
        ("ragsage.adapters.postgres.jobs.store", "ragsage.jobs.runner"),
        ("ragsage.query.engine", "ragsage.adapters.postgres"),
        ("ragsage.evaluation.writing", "evaluation_data.code_questions"),
    }


def test_adapters_of_one_technology_do_not_reach_into_another() -> None:
    crossing = sorted(
        (importer, imported)
        for importer, imported in import_graph()
        if layer_of(importer) == layer_of(imported) == "adapter"
        and importer.split(".")[2] != imported.split(".")[2]
    )
    assert crossing == [], "adapters import core and their own vendor SDK only"


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(module_graph(ROOT, PACKAGES)) == []


def test_a_deliberate_circle_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "loopy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("from loopy import second\n")
    # Lazy and type-checking-only imports close a circle too.
    (package / "second.py").write_text("def later() -> None:\n    from loopy.third import x\n")
    (package / "third.py").write_text("if False:\n    import loopy.first\nx = 1\n")
    (package / "apart.py").write_text("import loopy.first\n")  # reaches it, is not in it
    assert circles(module_graph(tmp_path, ["loopy"])) == [
        ["loopy.first", "loopy.second", "loopy.third"]
    ]


# Storage and queues the API reaches only through the services and the runtime.
STORES = ("ragsage.adapters.postgres", "ragsage.adapters.celery", "ragsage.adapters.redis")


def test_the_api_imports_no_storage_or_queue_adapter_and_runs_no_sql() -> None:
    reaching = sorted(
        (importer, imported)
        for importer, imported in import_graph()
        if importer.split(".")[0] == "api"
        and any(imported == store or imported.startswith(store + ".") for store in STORES)
    )
    assert reaching == [], "management goes through ragsage.management; the rest the runtime"
    sql = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "api").rglob("*.py")
        for imported in imports_of(path.read_text(encoding="utf-8"))
        if imported.split(".")[0] in {"sqlalchemy", "psycopg", "celery"}
    )
    opened = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "api").rglob("*.py")
        if ".session(" in (source := path.read_text(encoding="utf-8"))
        or "system_session(" in source
    )
    assert sql == [] and opened == [], "no view opens a session or runs SQL"


# The command package, the API and the worker are three entry points: none imports
# another.  A command starts the API or a worker by naming its entry point to
# gunicorn or Celery.
ENTRY_PACKAGES = ("api", "worker", "ragsage.cli")


def _entry_of(module: str) -> str | None:
    return next((p for p in ENTRY_PACKAGES if module == p or module.startswith(p + ".")), None)


def test_the_command_line_the_api_and_the_worker_import_none_of_one_another() -> None:
    crossing = sorted(
        (importer, imported)
        for importer, imported in import_graph()
        if (ours := _entry_of(importer)) is not None
        and (theirs := _entry_of(imported)) is not None
        and ours != theirs
    )
    assert crossing == []
