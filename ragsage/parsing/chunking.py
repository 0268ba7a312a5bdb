"""``ragsage.parsing.chunking``: the two-pass chunker, at the path the reference page names.

It lives in :mod:`ragsage.adapters.parsing.chunking`.
"""

from ragsage.adapters.parsing.chunking import chunk_pages

__all__ = ["chunk_pages"]
