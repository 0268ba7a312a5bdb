"""``ragsage.library.enqueue``: the enqueue interface, by the path docs/ingestion.md shows.

It lives in :mod:`ragsage.jobs.enqueue`, with the rest of the job producer.
"""

from ragsage.jobs.enqueue import *  # noqa: F403 - the home's names, as its __all__ lists them
from ragsage.jobs.enqueue import __all__ as __all__
