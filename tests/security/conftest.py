"""The hostile-user suite runs on the integration tests' real services.

Each attack of docs/security.md is a test here against a real stack: an
embedded Postgres with pgvector, Redis, a Celery worker where one is needed,
the API over HTTP, and Debian's headless Chromium for attacks on the web page.
The fixtures are the integration suite's own, registered here by importing
them (pytest collects fixtures a conftest module holds, wherever they were
defined).
"""

from __future__ import annotations

from tests.integration.conftest import (  # noqa: F401
    api,
    database_url,
    db,
    deployment,
    migrated_template,
    pg_config,
    postgres_server,
    running,
)
from tests.integration.redis_fixtures import redis_server_fixture  # noqa: F401
from tests.integration.web.conftest import browser  # noqa: F401
from tests.integration.webhook_harness import receiver_fixture  # noqa: F401
from tests.integration.worker_harness import broker_fixture  # noqa: F401
