"""The Celery ingestion worker: one job per document, identifiers through the broker.

Thin on purpose: the work itself is :mod:`ragsage.jobs`; this package binds it to
Celery (the app and its settings, the task, the per-process runtime and the
watchdog thread) and offers :func:`worker.enqueue.enqueue_document` to upload
services.
"""
