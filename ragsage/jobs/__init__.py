"""Ingestion jobs: the upload path, running one job, and recovering lost ones.

Independent of Celery: the worker package binds these to a queue, and an
upload service or the API calls :func:`~ragsage.adapters.postgres.jobs.uploads.create_upload`.
"""
