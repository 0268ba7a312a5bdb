"""``ragsage.fakes``: a recording double for every port, by the path the reference page names.

They live in :mod:`ragsage.testing`.
"""

from ragsage.testing import *  # noqa: F403 - the home's names, as its __all__ lists them
from ragsage.testing import __all__ as __all__
