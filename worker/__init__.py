"""Celery ingestion worker (entry point; filled in by the worker issue)."""
