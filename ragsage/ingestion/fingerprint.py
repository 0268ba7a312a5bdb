"""A short name for the settings that cut a document into chunks.

Stored with every chunk row (storage migration 26): a re-index into another
embedding model whose chunking has the same fingerprint reuses the rows and
embeds them again, instead of chunking and contextualizing every document
anew.  The fingerprint covers the engine's version (and the chunker's own
output version), the chunk size and overlap, and the plain settings of the
chunker and the contextualizer (their class and every scalar attribute, so a
setting added later is covered without anyone remembering to list it).  A
change to the chunking code between releases moves the version; in between,
``ragsage reprocess`` re-reads.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata

from ragsage.ingestion.config import IngestionConfig

_SCALARS = (str, int, float, bool, type(None))


def chunking_fingerprint(config: IngestionConfig, chunker: object, contextualizer: object) -> str:
    """Sixteen hex digits that change whenever the chunks or their embed text would."""
    parts = {
        "version": _engine_version(),
        "size": config.chunk_size,
        "overlap": config.chunk_overlap,
        "chunker": _settings_of(chunker),
        "contextualizer": _settings_of(contextualizer) if config.contextualize else None,
    }
    encoded = json.dumps(parts, sort_keys=True).encode()
    return hashlib.blake2b(encoded, digest_size=8).hexdigest()


def _engine_version() -> str:
    try:
        return metadata.version("ragsage")
    except metadata.PackageNotFoundError:  # a source tree run without installing
        return ""


def _settings_of(part: object) -> dict[str, object]:
    kind = type(part)
    found: dict[str, object] = {"class": f"{kind.__module__}.{kind.__qualname__}"}
    # A reader's own output version (the parse cache's key) moves with its code.
    version = getattr(part, "cache_version", None)
    if isinstance(version, str):
        found["output version"] = version
    attributes = getattr(part, "__dict__", {})
    for name in sorted(attributes):
        value = attributes[name]
        if isinstance(value, _SCALARS):
            found[name] = value
    return found
