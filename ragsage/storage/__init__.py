"""``ragsage.storage``: Postgres (the pool, scoped sessions, the stores), by its documented path.

It lives in :mod:`ragsage.adapters.postgres`.  ``import ragsage`` does not load
it, so a caller that only parses needs no database driver.
"""

from ragsage.adapters.postgres import *  # noqa: F403 - the home's names, as its __all__ lists them
from ragsage.adapters.postgres import __all__ as __all__
