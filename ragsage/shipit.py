"""``ragsage.shipit``: the shipit-compatible RAG API, by its short path.

It lives in :mod:`ragsage.library.shipit`; docs/library.md maps each name to
ragsage's own API.
"""

from ragsage.library.shipit import *  # noqa: F403 - the home's names, as its __all__ lists them
from ragsage.library.shipit import __all__ as __all__
