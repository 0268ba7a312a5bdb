"""Model-free parsing: format routing, per-format readers, page routing and chunking.

:class:`HeuristicBackend` is both the DocumentParser and the Chunker port;
:class:`LayoutPageClassifier` is the TEXT/VISION page policy.  Format libraries
(pypdfium2, python-docx, python-pptx, selectolax, Pillow) and tiktoken load only
when a document needs them, so importing this package is cheap.
"""

from ragsage.parsing.backend import HeuristicBackend
from ragsage.parsing.classifier import LayoutPageClassifier
from ragsage.parsing.formats import DocumentFormat, route
from ragsage.parsing.limits import ParseLimits
from ragsage.parsing.tokens import make_token_counter

__all__ = [
    "DocumentFormat",
    "HeuristicBackend",
    "LayoutPageClassifier",
    "ParseLimits",
    "make_token_counter",
    "route",
]
