"""The job queue on Celery over Redis: task names, priorities, the app factory, sends.

What an upload service and a worker must agree on, and nothing else: importing
this builds no Celery app and reads no environment.  :func:`create_celery`
makes an app for given settings and opens no connection; the worker's own app
is made in :mod:`worker.app`.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import redis
from celery import Celery
from kombu.exceptions import OperationalError as KombuOperationalError

from ragsage.core.errors import BrokerUnavailable


@dataclass(frozen=True)
class QueueSettings:
    """What the queue needs to know: the broker, the two queues, the time limits.

    ``Settings.queue()`` makes one, so this module never reads the settings itself.
    """

    redis_url: str
    ingest_queue: str
    reindex_queue: str
    job_soft_time_limit: float
    job_time_limit: float
    broker_visibility_timeout: float


INGEST_TASK = "ragsage.ingest_document"
REINDEX_TASK = "ragsage.reindex_document"

# Celery's Redis transport keeps one list per priority step and pops the lower
# step first.  New work goes in at NORMAL_PRIORITY; a job the watchdog recovers
# from a dead worker, or a retry, at RECOVERED_PRIORITY, so it runs next rather
# than behind the whole backlog.
PRIORITY_STEPS = (0, 3, 6, 9)
RECOVERED_PRIORITY = 0
NORMAL_PRIORITY = 6
_PRIORITY_SEPARATOR = "\x06\x16"  # kombu's default, spelled out for queue_keys


def queue_keys(queue: str) -> list[str]:
    """The Redis lists that hold ``queue``'s waiting messages, one per priority step."""
    return [
        queue if step == 0 else f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in PRIORITY_STEPS
    ]


def queue_depths(client: redis.Redis, settings: QueueSettings) -> dict[str, int]:
    """Messages waiting in the ingest and re-index queues, summed over priority steps.

    Raises ``redis.RedisError`` (or ``OSError``) when the broker cannot answer.
    """
    queues = (settings.ingest_queue, settings.reindex_queue)
    with client.pipeline() as pipe:
        for queue in queues:
            for key in queue_keys(queue):
                pipe.llen(key)
        sizes = [int(size) for size in pipe.execute()]
    steps = len(PRIORITY_STEPS)
    return {queue: sum(sizes[i * steps : (i + 1) * steps]) for i, queue in enumerate(queues)}


def waiting_messages(settings: QueueSettings) -> int | None:
    """All messages waiting in the broker's queues; None if the broker is away."""
    client = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    try:
        return sum(queue_depths(client, settings).values())
    except (redis.RedisError, OSError):
        return None
    finally:
        client.close()


# What a send raises when the broker cannot be reached (kombu wraps redis-py's own
# errors; a refused or reset socket can surface as a bare OSError).
_BROKER_DOWN = (KombuOperationalError, redis.ConnectionError, redis.TimeoutError, OSError)


def publish(
    celery: Celery,
    settings: QueueSettings,
    namespace: str,
    job_id: UUID,
    *,
    kind: str = "ingest",
    countdown: float | None = None,
    recovered: bool = False,
) -> None:
    """Send a job's message on its kind's queue: uploads never wait behind a re-index.

    ``recovered`` (a job re-sent by the watchdog, or retried) jumps the queue.
    Raises :class:`~ragsage.core.errors.BrokerUnavailable` when the broker is away.
    """
    task, queue = (
        (INGEST_TASK, settings.ingest_queue)
        if kind == "ingest"
        else (REINDEX_TASK, settings.reindex_queue)
    )
    try:
        celery.send_task(
            task,
            args=[namespace, str(job_id)],
            queue=queue,
            countdown=countdown,
            priority=RECOVERED_PRIORITY if recovered else NORMAL_PRIORITY,
        )
    except _BROKER_DOWN as exc:
        raise BrokerUnavailable(
            f"the job queue could not take job {job_id} ({type(exc).__name__})"
        ) from exc


def create_celery(settings: QueueSettings) -> Celery:
    """A Celery app whose delivery guarantees match the job bookkeeping."""
    app = Celery("ragsage", broker=settings.redis_url, include=["worker.tasks"])
    app.conf.update(
        # Acknowledge after the task ran, and put the message back if the worker
        # process dies mid-task: the job row decides whether it runs again.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_soft_time_limit=settings.job_soft_time_limit,
        task_time_limit=settings.job_time_limit,
        task_default_queue=settings.ingest_queue,
        task_routes={
            INGEST_TASK: {"queue": settings.ingest_queue},
            REINDEX_TASK: {"queue": settings.reindex_queue},
        },
        task_default_priority=NORMAL_PRIORITY,
        broker_transport_options={
            "visibility_timeout": settings.broker_visibility_timeout,
            "priority_steps": list(PRIORITY_STEPS),
            "sep": _PRIORITY_SEPARATOR,
        },
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    return app
