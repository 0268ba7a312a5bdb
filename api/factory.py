"""The API's app factory: ``create_app`` builds the process's runtime once; views
submit engine coroutines to the process's single event loop.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from flask import Flask, Response, g, request

from api import web
from api.auth import authenticate_request, challenge_header, settle_unchecked
from api.bodies import hold_bodies
from api.costs import AnswersAtOnce, SearchTimeouts
from api.errors import register_error_handlers
from api.keycache import Signers
from api.limits import RateLimited, RequestLimits, too_many
from api.metrics import Metrics
from api.probes import Probes
from api.routes import (
    chat,
    documents,
    jobs,
    keys,
    ops,
    query,
    reindex,
    sign_in,
    usage,
    webhooks,
)
from api.routes.common import check_path_ids
from api.services import EXTENSION, Services, name_read_servers
from ragsage.adapters.observability.logs import (
    bind_log_context,
    configure_logging,
    reset_log_context,
)
from ragsage.adapters.sealing import Sealer, sealer_or_none
from ragsage.jobs.enqueue import Enqueuer
from ragsage.library.sign_in import USED_PREFIX, SignInCodes, UsedCodes
from ragsage.runtime import Runtime, adapter_overrides, build_runtime
from ragsage.runtime.loop import LoopThread
from ragsage.runtime.serving import used_marks
from ragsage.settings import Settings

_log = logging.getLogger(__name__)
# Routes that take no key: probes, the page, and the exchange that gives the page one.
_PUBLIC = {"ops", "web", "sign_in"}
# A caller's request id is echoed and logged only if it is short and plain.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# Where a request's key, as logs name it, waits for the access log line.
KEY_LOG_FIELD = "ragsage.key"


def create_app(settings: Settings | None = None, *, runtime: Runtime | None = None) -> Flask:
    """Build the API for ``settings`` (default: from the environment)."""
    chosen = settings or Settings.from_env()
    app = Flask("ragsage")
    # First of the request hooks: no hook or view may read a body before its limit is set.
    hold_bodies(app)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    loop = LoopThread("ragsage-api")
    built = runtime or build_runtime(chosen, **adapter_overrides(chosen))
    sealer = sealer_or_none(chosen.sealing_keys)
    probes = Probes(chosen, loop, built)
    metrics = Metrics(
        probes.queue_depth, probes.job_counts, probes.webhook_backlog, probes.replicas
    )
    limits = RequestLimits(
        chosen,
        on_unavailable=metrics.limits_unavailable.inc,
        on_refused=lambda limit, _: metrics.refused.labels(limit.name).inc(),
    )
    here = Services(
        settings=chosen,
        loop=loop,
        runtime=built,
        enqueuer=Enqueuer(chosen, database=built.database, loop=loop),
        metrics=metrics,
        probes=probes,
        limits=limits,
        answers=AnswersAtOnce(chosen),
        timeouts=SearchTimeouts(chosen, built),
        signers=Signers(chosen.restricted_key_recheck),
        sealer=sealer,
        sign_in=_sign_in(chosen, sealer),
    )
    app.extensions[EXTENSION] = here
    _log.info(
        "ragsage API: embedder %s, reranker %s, generator %s",
        built.embedder.model,
        type(built.reranker).__name__ if built.reranker else "none",
        type(built.llm).__name__,
    )
    for module in (ops, query, chat, documents, jobs, keys, reindex, usage, webhooks, sign_in, web):
        app.register_blueprint(module.blueprint)
    register_error_handlers(app)
    app.register_error_handler(RateLimited, lambda limited: too_many(limited.refusal))

    @app.before_request
    def start() -> Response | None:
        g.started = time.perf_counter()
        offered = request.headers.get("X-Request-Id", "")
        g.request_id = offered if _REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex
        g.log_token = bind_log_context(request_id=g.request_id)
        if request.blueprint not in _PUBLIC and request.endpoint is not None:
            try:
                authenticate_request()
            except RateLimited as limited:
                return too_many(limited.refusal)
            who = g.principal
            namespace = who.scope.namespace
            # The access log's key column (api/gunicorn_config.py); never the credential.
            request.environ[KEY_LOG_FIELD] = who.label
            restriction = who.restriction
            bind_log_context(
                namespace=namespace,
                key=who.label,
                subject=restriction.subject or None if restriction is not None else None,
            )
            if "uncounted" not in g:  # else counted beside the search (api.auth.run_checked)
                refusal = here.limits.check_namespace(request.endpoint, namespace)
                if refusal is not None:
                    return too_many(refusal)
            check_path_ids(request.view_args or {})
        return None

    @app.after_request
    def finish(response: Response) -> Response:
        response = settle_unchecked(response)
        endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
        elapsed = time.perf_counter() - getattr(g, "started", time.perf_counter())
        here.metrics.observe(endpoint, request.method, response.status_code, elapsed)
        if response.status_code == 401:
            response.headers["WWW-Authenticate"] = challenge_header()
        if "request_id" in g:
            response.headers["X-Request-Id"] = g.request_id
        name_read_servers(response, here.metrics)
        return response

    @app.teardown_request
    def forget(_: BaseException | None) -> None:
        token = g.pop("log_token", None)
        if token is not None:
            reset_log_context(token)

    return app


def _sign_in(settings: Settings, sealer: Sealer | None) -> tuple[SignInCodes, UsedCodes] | None:
    """The sign-in codes of this deployment, and where used ones are marked.

    The marks go to the broker's Redis: it never evicts (``noeviction``) and
    keeps its data across a restart, so a used code stays used until it has
    expired anyway.  The cache's Redis, which evicts, could forget a mark.
    """
    if sealer is None:
        return None
    return SignInCodes(sealer), used_marks(settings, USED_PREFIX)


def create_production_app() -> Any:
    """The gunicorn entry point (settings from the environment)."""
    settings = Settings.from_env()
    configure_logging(settings.log_level, json=settings.log_json)
    return create_app(settings)
