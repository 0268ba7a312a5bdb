"""``ragsage.caching``: the parse cache's keys and wire format, by their documented path.

They live in :mod:`ragsage.ingestion.parse_cache`.
"""

from ragsage.ingestion.parse_cache import (
    PARSE_CACHE_VERSION,
    decode_parsed,
    encode_parsed,
    parse_cache_key,
    parser_fingerprint,
)

__all__ = [
    "PARSE_CACHE_VERSION",
    "decode_parsed",
    "encode_parsed",
    "parse_cache_key",
    "parser_fingerprint",
]
