"""Old import paths of modules that moved, kept working for one release.

``import ragsage.types`` (say) finds nothing at the old place, so this finder,
last on ``sys.meta_path``, answers with the module's new home,
``ragsage.core.types``: the very same module object, so classes and their
identity are shared.  Each use warns once with the new name.
``docs/architecture.md`` lists every move.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

# Old dotted name → new one.  A package's old name covers its submodules too.
MOVED: dict[str, str] = {
    "ragsage.types": "ragsage.core.types",
    "ragsage.ports": "ragsage.core.ports",
    "ragsage.errors": "ragsage.core.errors",
    "ragsage.text": "ragsage.core.text",
    "ragsage.identity": "ragsage.core.identity",
    "ragsage.serialization": "ragsage.core.serialization",
    "ragsage.prompts": "ragsage.core.prompts",
    "ragsage.offload": "ragsage.core.offload",
    "ragsage.tracing": "ragsage.core.tracing",
    "ragsage.transcribing": "ragsage.core.transcribing",
    "ragsage.urls": "ragsage.core.urls",
    "ragsage.parsing": "ragsage.adapters.parsing",
    "ragsage.contextualizing": "ragsage.adapters.parsing.contextualizing",
    "ragsage.storage": "ragsage.adapters.postgres",
    "ragsage.keys": "ragsage.adapters.postgres.keys",
    "ragsage.cache": "ragsage.adapters.redis",
    "ragsage.providers": "ragsage.adapters.providers",
    "ragsage.embedded": "ragsage.adapters.embedded",
    "ragsage.observability": "ragsage.adapters.observability",
    "ragsage.passage_scoring": "ragsage.adapters.offline.passage_scoring",
    "ragsage.embedders": "ragsage.adapters.functions",
    "ragsage.embedding_cache": "ragsage.adapters.embedding_cache",
    "ragsage.caching": "ragsage.ingestion.parse_cache",
    "ragsage.fusion": "ragsage.query.fusion",
    "ragsage.llm_reranker": "ragsage.query.llm_reranker",
    "ragsage.loop": "ragsage.runtime.loop",
    "ragsage.fakes": "ragsage.testing",
    "ragsage.shipit": "ragsage.library.shipit",
    "ragsage.evaluation.backends": "ragsage.cli.evaluation.backends",
    "ragsage.evaluation.api_backend": "ragsage.cli.evaluation.api_backend",
    "ragsage.evaluation.disk_cache": "ragsage.cli.evaluation.disk_cache",
    "ragsage.evaluation.cli": "ragsage.cli.evaluation.command",
    "ragsage.jobs.records": "ragsage.core.jobs",
    "ragsage.jobs.store": "ragsage.adapters.postgres.jobs.store",
    "ragsage.jobs.page_store": "ragsage.adapters.postgres.jobs.page_store",
    "ragsage.jobs.uploads": "ragsage.adapters.postgres.jobs.uploads",
    "ragsage.jobs.reprocess": "ragsage.adapters.postgres.jobs.reprocess",
    "ragsage.jobs.reindex": "ragsage.adapters.postgres.jobs.reindex",
    "ragsage.jobs.reindex_status": "ragsage.adapters.postgres.jobs.reindex_status",
    "ragsage.jobs.documents": "ragsage.adapters.postgres.jobs.documents",
}


def new_name(old: str) -> str | None:
    """Where the module once called ``old`` lives now, or None if it never moved."""
    for before, after in MOVED.items():
        if old == before or old.startswith(before + "."):
            return after + old[len(before) :]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} has moved to {self.target}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old name's spec on the module; give it back
        # its own, so the module still knows where it lives.
        module.__spec__ = self._spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        # Asked for every import no other finder answered, third-party ones too.
        if not fullname.startswith("ragsage."):
            return None
        moved = new_name(fullname)
        if moved is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(moved))


def install() -> None:
    """Put the finder last on ``sys.meta_path`` (once): real modules always win."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
