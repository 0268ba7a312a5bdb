"""Drivers' errors become the error tree at the adapters, and one rule says what a client reads."""

from __future__ import annotations

import ast
from pathlib import Path
from uuid import uuid4

import psycopg
import pytest
from sqlalchemy.exc import OperationalError as WrappedOperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from ragsage.adapters.celery.broker import create_celery, publish
from ragsage.adapters.postgres.sessions import database_failure
from ragsage.core.errors import (
    BrokerUnavailable,
    InvalidRequest,
    StorageError,
    StorageTimeout,
    StorageUnavailable,
    client_message,
)
from ragsage.core.generations import EmbeddingModelMismatch, Generation
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
VENDORS = {"psycopg", "redis", "kombu", "sqlalchemy", "celery"}


def test_the_apis_error_handler_imports_no_driver_or_queue() -> None:
    tree = ast.parse((ROOT / "api" / "errors.py").read_text(encoding="utf-8"))
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        for name in (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else []
        )
    }
    assert imported & VENDORS == set()


def test_a_send_to_a_broker_that_is_away_raises_the_trees_retryable_error() -> None:
    queue = Settings.from_env({}, redis_url="redis://127.0.0.1:1/0").queue()
    celery = create_celery(queue)
    try:
        with pytest.raises(BrokerUnavailable) as raised:
            publish(celery, queue, "acme", uuid4())
    finally:
        celery.close()
    assert raised.value.retryable
    assert raised.value.__cause__ is not None  # the driver's own error, for the log


def _caused_by(cause: BaseException) -> RuntimeError:
    try:
        raise RuntimeError("while serving a request") from cause
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (psycopg.OperationalError("connection refused"), StorageUnavailable),
        (psycopg.InterfaceError("the connection is closed"), StorageUnavailable),
        (PoolTimeout("pool exhausted"), StorageUnavailable),
        (_caused_by(psycopg.OperationalError("server closed the connection")), StorageUnavailable),
        (
            WrappedOperationalError("SELECT 1", {}, psycopg.errors.QueryCanceled("timeout")),
            StorageTimeout,
        ),
        (psycopg.errors.DataError("invalid byte sequence"), InvalidRequest),
        (psycopg.errors.UniqueViolation("duplicate key"), StorageError),
    ],
)
def test_a_database_failure_is_named_in_the_error_tree(
    failure: BaseException, expected: type[Exception]
) -> None:
    translated = database_failure(failure)
    assert type(translated) is expected
    assert "connection refused" not in str(translated)  # the driver's words stay in the log


def test_a_full_pool_inside_a_stores_session_is_an_outage_a_job_retries() -> None:
    from ragsage.adapters.postgres.sessions import translate
    from ragsage.jobs.runner import is_transient

    # What a store raises when every pooled connection stayed busy for the
    # pool's timeout: before, "the database rejected the operation", and the
    # job failed for good instead of backing off.
    raised = translate(PoolTimeout("QueuePool limit of size 5 overflow 5 reached"))
    assert isinstance(raised, StorageUnavailable) and is_transient(raised)
    assert "TimeoutError" in str(raised) and "QueuePool" not in str(raised)
    # A statement timeout stays a timeout, raised bare (as the one-message reads do) or wrapped.
    assert isinstance(translate(psycopg.errors.QueryCanceled("timeout")), StorageTimeout)


def test_an_error_with_no_database_in_it_is_not_the_databases() -> None:
    assert database_failure(ValueError("no")) is None
    # Only an outage is looked for among the causes; a refused value must be the error itself.
    assert database_failure(_caused_by(psycopg.errors.UniqueViolation("duplicate"))) is None


def test_one_rule_says_which_messages_a_client_may_read() -> None:
    assert client_message(InvalidRequest("top_k must be at most 50")) == "top_k must be at most 50"
    # Ours wherever it is defined: an adapter's error is written for the caller too.
    pinned = Generation(1, "ragsage-hashing-1024", 1024, "active")
    mismatch = EmbeddingModelMismatch("acme", pinned, "voyage-3-large", 1024)
    assert "ragsage reindex --namespace acme" in (client_message(mismatch) or "")
    assert client_message(StorageUnavailable("the database is unavailable")) is not None
    # Anyone else's may quote a server's internals: only its kind may be named.
    assert client_message(psycopg.OperationalError("password authentication failed")) is None
    assert client_message(KeyError("secret")) is None


def _stores_error_from(cause: BaseException) -> StorageError:
    try:
        raise StorageError("the database rejected the operation") from cause
    except StorageError as exc:
        return exc


@pytest.mark.parametrize(
    ("failure", "which"),
    [
        (_stores_error_from(PoolTimeout("pool exhausted")), "database"),
        (_stores_error_from(psycopg.errors.QueryCanceled("statement timeout")), "timeout"),
        (StorageUnavailable("the database connection was lost"), "database"),
        (BrokerUnavailable("the job queue could not take job 1"), "broker"),
        (_caused_by(psycopg.OperationalError("connection refused")), "database"),
        (_stores_error_from(psycopg.errors.UniqueViolation("duplicate key")), None),
        (ValueError("nothing to do with a dependency"), None),
    ],
)
def test_the_api_names_the_dependency_that_is_down(failure: Exception, which: str | None) -> None:
    from api.errors import outage

    assert outage(failure, database_failure(failure)) == which
