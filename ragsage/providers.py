"""``ragsage.providers``: the model providers' adapters, by their documented path.

They live in :mod:`ragsage.adapters.providers`.  As there, importing this loads
no provider SDK; building the clients does.
"""

from ragsage.adapters.providers import *  # noqa: F403 - the home's names, as its __all__ lists them
from ragsage.adapters.providers import __all__ as __all__
