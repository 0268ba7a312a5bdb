"""Model-free parsing: format routing, per-format readers, page routing and chunking.

:class:`HeuristicBackend` is both the DocumentParser and the Chunker port;
:class:`LayoutPageClassifier` is the TEXT/VISION page policy.  Format libraries
(pypdfium2, python-docx, python-pptx, selectolax, Pillow) and tiktoken load only
when a document needs them, so importing this package is cheap.
"""

from ragsage.adapters.parsing.backend import HeuristicBackend
from ragsage.adapters.parsing.classifier import LayoutPageClassifier
from ragsage.adapters.parsing.formats import DocumentFormat, route
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.adapters.parsing.tokens import make_token_counter

__all__ = [
    "DocumentFormat",
    "HeuristicBackend",
    "LayoutPageClassifier",
    "ParseLimits",
    "make_token_counter",
    "route",
]
