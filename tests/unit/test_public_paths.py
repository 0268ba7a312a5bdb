"""The import paths the reference pages and the README document are real modules.

Each is a small module that re-exports names from where the code lives: it
imports without a warning, lists its names in ``__all__`` (so type checkers and
editors see them), and hands out the very objects of its home module.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Documented path → the module its names come from.
PUBLIC = {
    "ragsage.parsing": "ragsage.adapters.parsing",
    "ragsage.parsing.chunking": "ragsage.adapters.parsing.chunking",
    "ragsage.parsing.identity": "ragsage.core.identity",
    "ragsage.contextualizing": "ragsage.adapters.parsing.contextualizing",
    "ragsage.providers": "ragsage.adapters.providers",
    "ragsage.storage": "ragsage.adapters.postgres",
    "ragsage.storage.schema": "ragsage.adapters.postgres.migrations",
    "ragsage.caching": "ragsage.ingestion.parse_cache",
    "ragsage.fakes": "ragsage.testing",
    "ragsage.shipit": "ragsage.library.shipit",
    "ragsage.library.enqueue": "ragsage.jobs.enqueue",  # docs/ingestion.md's
}

# The names the adapters reference page documents under each path.  It also shows
# ``ragsage.providers.CallConfig``, a LangChain type this code never had: the
# adapters call the providers' own SDKs.
DOCUMENTED = {
    "ragsage.parsing": "DocumentFormat HeuristicBackend LayoutPageClassifier route",
    "ragsage.contextualizing": "HeadingWindowContextualizer",
    "ragsage.providers": (
        "OpenAIContextualizer OpenAILLMClient OpenAIQueryRewriter ProviderClients "
        "ProviderConfig VoyageEmbedder VoyageReranker build_provider_clients"
    ),
    "ragsage.storage": (
        "Database PgDocumentStore PgLexicalStore PgVectorStore PostgresConfig SchemaMismatch "
        "Statement create_engine create_sessionmaker existing_embedding_dim isolation_preamble "
        "migrate migration_statements open_scoped_session purge_namespace safe_identifier "
        "safe_setting_name"
    ),
    "ragsage.caching": (
        "PARSE_CACHE_VERSION parser_fingerprint parse_cache_key encode_parsed decode_parsed"
    ),
    "ragsage.fakes": (
        "FakeDocumentParser FakePageClassifier FakeChunker FakeContextualizer FakeEmbedder "
        "FakeReranker FakeLLMClient FakeQueryRewriter FakeVectorStore FakeLexicalStore "
        "FakeDocumentStore FakeCache RecordedSpan FakeSpan FakeTracer FakeEngineKit all_fakes"
    ),
    "ragsage.shipit": "RAG HybridSearchPipeline HashingEmbedder SearchQuery IndexFilters",
    "ragsage.library.enqueue": "Enqueuer",
}


def test_every_documented_path_imports_with_warnings_as_errors() -> None:
    statement = "import " + ", ".join(sorted(PUBLIC))
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", statement],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("path", sorted(PUBLIC))
def test_a_documented_path_hands_out_its_home_modules_objects(path: str) -> None:
    public, home = importlib.import_module(path), importlib.import_module(PUBLIC[path])
    assert public.__all__, f"{path} names nothing"
    for name in public.__all__:
        assert getattr(public, name) is getattr(home, name), f"{path}.{name}"
    assert set(DOCUMENTED.get(path, "").split()) <= set(public.__all__)


def test_an_undocumented_old_path_is_simply_gone() -> None:
    # No import hook answers for modules that moved, and nothing is left at their old
    # places; only the documented paths remain.
    import ragsage  # noqa: F401 - the package that once installed the hook

    hooks = [f for f in sys.meta_path if type(f).__module__.startswith(("ragsage", "worker"))]
    assert hooks == []
    for old in ("ragsage.types", "ragsage.fusion", "ragsage.moved", "worker.enqueue"):
        place = ROOT / Path(*old.split("."))
        assert not place.with_suffix(".py").exists() and not place.is_dir(), old
