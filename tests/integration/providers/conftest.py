"""The provider tests' fixtures: a loopback server per test, and clients built for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from ragsage.adapters.providers import ProviderClients, build_provider_clients
from tests.integration.provider_server import ProviderServer

from .shared import config_for


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    running = ProviderServer().start()
    yield running
    running.stop()


@pytest.fixture
async def clients(server: ProviderServer) -> AsyncIterator[ProviderClients]:
    built = build_provider_clients(config_for(server))
    yield built
    await built.aclose()
