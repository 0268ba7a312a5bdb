"""The worker's Celery application, configured from the environment.

``celery -A worker.app worker`` (or ``ragsage worker``) finds ``app`` here.  This
is the one place an app is built from ``Settings.from_env()``: upload services
send through :mod:`ragsage.adapters.celery.broker` with the settings they hold.
"""

from __future__ import annotations

from celery.signals import setup_logging

from ragsage.adapters.celery.broker import create_celery
from ragsage.adapters.observability.logs import configure_logging
from ragsage.settings import Settings

settings = Settings.from_env()
queue = settings.queue()
app = create_celery(queue)


@setup_logging.connect
def _configure_logging(**_: object) -> None:
    # Connecting this signal stops Celery configuring logging itself; pool
    # children inherit the handler when they fork.
    configure_logging(settings.log_level, json=settings.log_json)
