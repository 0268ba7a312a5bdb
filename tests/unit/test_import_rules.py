"""Which packages may load which, probed in a fresh interpreter.

The API serves requests and sends jobs; it must not load the worker, whose
Celery app is built from the environment when ``worker.app`` is imported (an
API given other settings would then send with the environment's).
"""

from __future__ import annotations

import json

import pytest

from .fresh_python import run_fresh


def loaded_by(statement: str, prefix: str) -> list[str]:
    """The modules named ``prefix`` or under it that ``statement`` leaves in ``sys.modules``."""
    probe = (
        f"import sys, json; {statement}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m == {prefix!r} "
        f"or m.startswith({prefix + '.'!r}))))"
    )
    out = run_fresh(probe)
    found: list[str] = json.loads(out.stdout)
    return found


@pytest.mark.parametrize(
    "statement",
    [
        "import api",
        "from api import create_app",
        "import api.routes.documents, api.probes, api.services",
        "from ragsage.library.enqueue import Enqueuer",
        "from ragsage.jobs.enqueue import Enqueuer",
        "import ragsage.adapters.celery.broker",
    ],
)
def test_the_api_and_the_enqueue_interface_load_nothing_of_the_worker(statement: str) -> None:
    assert loaded_by(statement, "worker") == []


def test_the_probe_sees_a_violation() -> None:
    # The same probe on code that does reach into the worker names what it loaded.
    assert "worker.app" in loaded_by("import api; import worker.tasks", "worker")


def test_the_enqueue_interface_builds_its_app_from_the_settings_it_is_given() -> None:
    probe = (
        "import os; os.environ['RAGSAGE_REDIS_URL'] = 'redis://from-the-environment:1/0'; "
        "from ragsage.library.enqueue import Enqueuer; "
        "from ragsage.settings import Settings; "
        "s = Settings.from_env({}, redis_url='redis://given:2/0', "
        "database_url='postgresql://nobody@127.0.0.1:1/none'); "
        "e = Enqueuer(s); print(e.celery.conf.broker_url)"
    )
    out = run_fresh(probe)
    assert out.stdout.strip() == "redis://given:2/0"
