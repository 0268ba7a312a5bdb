"""``ragsage.parsing``: the parser, the page classifier and the format router, by their short path.

The reference page documents this path; the code lives in
:mod:`ragsage.adapters.parsing`, and these are the same objects.  Importing it
loads no database driver, web framework or model runtime.
"""

from ragsage.adapters.parsing import *  # noqa: F403 - the home's names, as its __all__ lists them
from ragsage.adapters.parsing import __all__ as __all__
