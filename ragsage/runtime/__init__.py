"""The composition root: every port of a process, built once from :class:`Settings`.

The API calls :func:`build_runtime` in its app factory, the worker in its process
start-up hook, the CLI per command.  Ports passed in explicitly win over the
ones the settings describe, which is how tests plug in a slow or failing model.
Building opens no connection; the first query does.
"""

from ragsage.runtime.building import adapter_overrides, build_runtime
from ragsage.runtime.container import EmbedderFactory, Runtime
from ragsage.runtime.infrastructure import build_cache, build_database, build_tracer
from ragsage.runtime.models import hashing_dimension, make_embedder, provider_config

__all__ = [
    "EmbedderFactory",
    "Runtime",
    "adapter_overrides",
    "build_cache",
    "build_database",
    "build_runtime",
    "build_tracer",
    "hashing_dimension",
    "make_embedder",
    "provider_config",
]
