"""Ingestion jobs: the upload path, running one job, and recovering lost ones.

Independent of Celery: the worker package binds these to a queue.  An upload
service or the API sends jobs with :class:`~ragsage.jobs.enqueue.Enqueuer`,
which commits each upload (:func:`~ragsage.adapters.postgres.jobs.uploads.create_upload`)
before its message goes out.
"""
