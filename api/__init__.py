"""The Flask query API: a thin HTTP face over the engine and the job bookkeeping.

``create_app`` is the app factory (gunicorn: ``ragsage api``, or
``gunicorn 'api:create_app()'``); it lives in :mod:`api.factory`.  Importing this
package loads nothing else: the ``ragsage`` command imports ``api.cli`` to list its
subcommand, and every ``ragsage`` run would otherwise pay for Flask, the runtime and
the routes (about a second of start-up) before doing anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.factory import KEY_LOG_FIELD, create_app, create_production_app

__all__ = ["KEY_LOG_FIELD", "create_app", "create_production_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from api import factory

        return getattr(factory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
