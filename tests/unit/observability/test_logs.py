from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from ragsage.adapters.observability.logs import (
    JsonFormatter,
    configure_logging,
    current_log_context,
    log_context,
    redact,
)
from ragsage.core.errors import ConfigurationError
from ragsage.runtime.loop import LoopThread

KEY = "rsk_ab12cd34ef_" + "S3cr3t-Value_" * 3 + "xyz"


@pytest.fixture
def lines(root_logger: logging.Logger) -> Iterator[io.StringIO]:
    """What the root logger writes once configured for JSON, at DEBUG."""
    stream = io.StringIO()
    configure_logging("info", json=True, stream=stream)
    yield stream


def records(stream: io.StringIO) -> list[dict[str, object]]:
    """Our records (asyncio and friends may log too)."""
    parsed = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [entry for entry in parsed if str(entry["logger"]).startswith("ragsage")]


def test_each_record_is_one_json_object_with_time_level_logger_and_message(
    lines: io.StringIO,
) -> None:
    before = datetime.now(UTC)
    logging.getLogger("ragsage.worker").info("job %s took %d ms", "j-1", 42)

    [entry] = records(lines)
    assert entry["level"] == "INFO"
    assert entry["logger"] == "ragsage.worker"
    assert entry["message"] == "job j-1 took 42 ms"
    stamp = datetime.fromisoformat(str(entry["time"]))
    assert stamp.utcoffset() == timedelta(0)
    assert abs(stamp - before) < timedelta(seconds=5)


def test_context_fields_reach_every_record_inside_and_none_outside(lines: io.StringIO) -> None:
    log = logging.getLogger("ragsage.test")
    job = UUID("8c4e8f8a-3a63-4c44-9d8b-0a1f2b3c4d5e")
    with log_context(namespace="acme", job_id=job, document_id=None):
        log.info("claimed")
        with log_context(document_id="doc-7", namespace="acme"):
            log.warning("parsed")
        log.info("after")
    log.info("outside")

    claimed, parsed, after, outside = records(lines)
    assert claimed["namespace"] == "acme" and claimed["job_id"] == str(job)
    assert "document_id" not in claimed  # None means "not known", not a field
    assert parsed["document_id"] == "doc-7" and parsed["job_id"] == str(job)
    assert "document_id" not in after and after["namespace"] == "acme"
    assert not {"namespace", "job_id", "document_id"} & set(outside)
    assert current_log_context() == {}


def test_extra_fields_are_printed_and_cannot_override_the_basic_ones(lines: io.StringIO) -> None:
    with log_context(request_id="r-1"):
        logging.getLogger("ragsage.t").info(
            "stored", extra={"chunks": 12, "at": datetime(2025, 1, 2, tzinfo=UTC)}
        )
    logging.getLogger("ragsage.t").info(
        "x", extra={"levelno_text": "ok", "request_id": "from-extra"}
    )

    stored, second = records(lines)
    assert stored["chunks"] == 12 and stored["at"] == "2025-01-02 00:00:00+00:00"
    assert stored["request_id"] == "r-1"
    assert second["request_id"] == "from-extra"


async def test_concurrent_tasks_each_log_their_own_context(lines: io.StringIO) -> None:
    log = logging.getLogger("ragsage.jobs")

    async def job(namespace: str) -> None:
        with log_context(namespace=namespace, job_id=f"job-{namespace}"):
            for step in range(3):
                await asyncio.sleep(0)  # interleave the two tasks
                log.info("step %d", step)

    await asyncio.gather(job("acme"), job("globex"))

    seen = records(lines)
    assert len(seen) == 6
    assert {(e["namespace"], e["job_id"]) for e in seen} == {
        ("acme", "job-acme"),
        ("globex", "job-globex"),
    }
    # The tasks really interleaved, so a shared (non-context) variable would have mixed them.
    assert [e["namespace"] for e in seen[:2]] == ["acme", "globex"]


def test_threads_each_log_their_own_context(lines: io.StringIO) -> None:
    log = logging.getLogger("ragsage.api")
    barrier = threading.Barrier(4)

    def request(number: int) -> None:
        with log_context(request_id=f"req-{number}"):
            barrier.wait(timeout=5)  # all four contexts are open at once
            log.info("handled %d", number)

    threads = [threading.Thread(target=request, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)

    assert sorted((e["request_id"], e["message"]) for e in records(lines)) == [
        (f"req-{n}", f"handled {n}") for n in range(4)
    ]


def test_a_coroutine_sent_to_the_loop_thread_logs_with_the_senders_context(
    lines: io.StringIO,
) -> None:
    # The API's views and the Celery task run engine code on a LoopThread: the
    # request's or job's fields must follow it there, and no further.
    log = logging.getLogger("ragsage.engine")

    async def work(label: str) -> str:
        await asyncio.sleep(0)
        log.info(label)
        return label

    loop = LoopThread("test-log-loop")
    try:
        with log_context(request_id="req-9", namespace="acme"):
            assert loop.run(work("inside"), timeout=5) == "inside"
        loop.run(work("after"), timeout=5)
    finally:
        loop.stop()

    inside, after = records(lines)
    assert inside["request_id"] == "req-9" and inside["namespace"] == "acme"
    assert "request_id" not in after


def test_an_exception_is_one_string_field_with_its_traceback(lines: io.StringIO) -> None:
    try:
        raise ValueError("bad page 3")
    except ValueError:
        logging.getLogger("ragsage").exception("parse failed")

    [entry] = records(lines)
    assert entry["level"] == "ERROR" and entry["message"] == "parse failed"
    text = entry["exception"]
    assert isinstance(text, str)
    assert text.startswith("Traceback (most recent call last):")
    assert text.rstrip().endswith("ValueError: bad page 3")


def test_secrets_never_reach_the_output(lines: io.StringIO) -> None:
    log = logging.getLogger("ragsage")
    dsn = "postgresql://ragsage:hunter2@db:5432/ragsage"
    log.info("authenticating %s against %s", KEY, dsn)
    try:
        raise ConnectionError(f"cannot reach redis://:p%40ss@cache:6379/0 with {KEY}")
    except ConnectionError:
        log.exception("cache down", extra={"url": dsn, "keys": [KEY]})
    with log_context(request_id=KEY):
        log.info("bearer")

    output = lines.getvalue()
    for secret in ("hunter2", "p%40ss", "S3cr3t"):
        assert secret not in output
    first, second, third = records(lines)
    assert first["message"] == (
        "authenticating rsk_ab12cd34ef_[redacted] against postgresql://ragsage:***@db:5432/ragsage"
    )
    assert "redis://:***@cache:6379/0" in str(second["exception"])
    assert second["url"] == "postgresql://ragsage:***@db:5432/ragsage"
    assert second["keys"] == ["rsk_ab12cd34ef_[redacted]"]
    assert third["request_id"] == "rsk_ab12cd34ef_[redacted]"


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        (f"Bearer {KEY}", "Bearer rsk_ab12cd34ef_[redacted]"),
        ("key rsk_notTheUsualShape", "key rsk_[redacted]"),
        ("sk-proj-" + "a" * 40, "sk-[redacted]"),
        ("mask-" + "a" * 40, "mask-" + "a" * 40),  # not a key: 'sk-' inside a word
        ("https://bob:pa@ss:w0rd@host/x", "https://bob:***@host/x"),
        ("redis://cache:6379/0", "redis://cache:6379/0"),  # a port is not a password
        ("postgresql://app@db/ragsage", "postgresql://app@db/ragsage"),
        ("dsn host=db password=s3cret user=x", "dsn host=db password=*** user=x"),
        ("GET /v1/x?token=abc&page=2", "GET /v1/x?token=***&page=2"),
        ("28 days of paid holiday", "28 days of paid holiday"),
    ],
)
def test_redaction_shapes(text: str, cleaned: str) -> None:
    assert redact(text) == cleaned


def test_configuring_twice_installs_one_handler_and_keeps_others(
    root_logger: logging.Logger,
) -> None:
    foreign = logging.NullHandler()
    root_logger.addHandler(foreign)
    first, second = io.StringIO(), io.StringIO()
    configure_logging("INFO", json=True, stream=first)
    configure_logging("WARNING", json=False, stream=second)

    ours = [h for h in root_logger.handlers if getattr(h, "stream", None) in (first, second)]
    assert foreign in root_logger.handlers
    assert len(ours) == 1 and getattr(ours[0], "stream", None) is second
    assert root_logger.level == logging.WARNING
    logging.getLogger("ragsage").info("quiet")
    with log_context(namespace="acme"):
        logging.getLogger("ragsage").warning("token=abc loud")
    assert first.getvalue() == ""
    line = second.getvalue()
    assert line.endswith("WARNING ragsage namespace=acme token=*** loud\n")


def test_an_unknown_level_is_refused_by_its_variable_name(root_logger: logging.Logger) -> None:
    with pytest.raises(ConfigurationError, match="RAGSAGE_LOG_LEVEL"):
        configure_logging("chatty", json=True)


def test_the_formatter_alone_still_adds_context_and_redacts() -> None:
    # A handler someone else built, with our formatter but none of our filters.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("ragsage.isolated")
    log.addHandler(handler)
    log.propagate = False
    try:
        with log_context(job_id="j-2"):
            log.error("key %s", KEY)
    finally:
        log.removeHandler(handler)
        log.propagate = True
    entry = json.loads(stream.getvalue())
    assert entry["job_id"] == "j-2" and entry["message"] == "key rsk_ab12cd34ef_[redacted]"
