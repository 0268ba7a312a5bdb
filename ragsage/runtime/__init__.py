"""The composition root: every port of a process, built once from :class:`Settings`.

The API calls :func:`build_runtime` in its app factory, the worker in its process
start-up hook, the CLI per command.  Ports passed in explicitly win over the
ones the settings describe, which is how tests plug in a slow or failing model.
Building opens no connection; the first query does.  :func:`compose` is the one
place the two pipelines are built from ports, :func:`offline_ports` the one
offline set.
"""

from ragsage.runtime.building import adapter_overrides, build_runtime
from ragsage.runtime.composition import Engine, EnginePorts, compose, offline_ports
from ragsage.runtime.container import EmbedderFactory, Runtime
from ragsage.runtime.infrastructure import build_cache, build_database, build_tracer
from ragsage.runtime.models import (
    hashing_dimension,
    make_embedder,
    provider_config,
    worth_caching,
)

__all__ = [
    "EmbedderFactory",
    "Engine",
    "EnginePorts",
    "Runtime",
    "adapter_overrides",
    "build_cache",
    "build_database",
    "build_runtime",
    "build_tracer",
    "compose",
    "hashing_dimension",
    "make_embedder",
    "offline_ports",
    "provider_config",
    "worth_caching",
]
