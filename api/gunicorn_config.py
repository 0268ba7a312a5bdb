"""gunicorn settings and hooks for the API (``gunicorn -c python:api.gunicorn_config``).

``ragsage api`` passes this module; the metrics directory it names in the
environment is shared by every worker, so a scrape of any one of them reports
the whole server.
"""

from __future__ import annotations

import sys
from typing import Any

from ragsage.adapters.observability import metrics_dir

# Client errors gunicorn finds before the app sees the request answer as JSON.
worker_class = "api.gunicorn_worker.JsonErrorWorker"
# gunicorn's own format with the key in the user's column: an API key's id, or
# "<parent id>/restricted/<token digest>" for a restricted key (api.factory.KEY_LOG_FIELD).
access_log_format = '%(h)s %(l)s %({ragsage.key}e)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'


def child_exit(server: Any, worker: Any) -> None:
    metrics_dir.process_exited(worker.pid)


def on_exit(server: Any) -> None:
    metrics_dir.finish()


def post_worker_init(worker: Any) -> None:
    # A search's thread gives up the GIL at each round trip and must win it back;
    # behind a thread busy in Python that takes up to the switch interval (5 ms
    # by default), which one tenant's burst of requests would add to another's.
    sys.setswitchinterval(0.001)
