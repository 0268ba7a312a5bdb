"""``ragsage.parsing.identity``: content hashes and document ids, at the documented path.

They live in :mod:`ragsage.core.identity`, since every layer computes them.
"""

from ragsage.core.identity import content_hash, document_id_for

__all__ = ["content_hash", "document_id_for"]
