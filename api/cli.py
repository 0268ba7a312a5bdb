"""``ragsage api``: serve the API with gunicorn (registered as a CLI plugin)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn


def register(commands: Any) -> None:
    serve = commands.add_parser("api", help="serve the HTTP API with gunicorn")
    serve.add_argument("--bind", default="127.0.0.1:8000")
    serve.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    serve.add_argument("--threads", type=int, default=8, help="threads per worker")
    serve.add_argument("--timeout", type=int, default=120)
    serve.set_defaults(handler=_serve, asynchronous=False)


def gunicorn_argv(bind: str, workers: int, threads: int, timeout: int) -> list[str]:
    """The gunicorn command line for the API (threads: views block on I/O, not CPU)."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "api.factory:create_production_app()",
        f"--bind={bind}",
        f"--workers={workers}",
        f"--threads={threads}",
        f"--timeout={timeout}",
        "--access-logfile=-",
        # The threaded worker that answers gunicorn's own refusals as JSON, and the
        # hooks that keep the workers' shared metrics directory.
        "--config=python:api.gunicorn_config",
    ]


def _serve(args: argparse.Namespace) -> NoReturn:
    from ragsage.adapters.observability import metrics_dir
    from ragsage.settings import Settings

    # Before gunicorn exists: its workers must import prometheus_client in
    # multiprocess mode, sharing this directory.
    metrics_dir.prepare("api", Settings.from_env().metrics_dir)
    argv = gunicorn_argv(args.bind, args.workers, args.threads, args.timeout)
    os.execv(sys.executable, argv)
