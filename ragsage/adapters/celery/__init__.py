"""Celery over a Redis broker: how jobs reach the workers (:mod:`.broker`)."""
