"""The Celery ingestion worker: one job per document, identifiers through the broker.

Thin on purpose: the work itself is :mod:`ragsage.jobs`; this package binds it to
Celery (the app and its settings, the task, the per-process runtime and the
watchdog thread).  Upload services send jobs through
:mod:`ragsage.jobs.enqueue` and load nothing of this package.
"""
