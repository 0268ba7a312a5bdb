"""Ingestion: a document's bytes to stored, searchable chunks (:mod:`.pipeline`).

Parse, classify each page, read scans, chunk, contextualize, embed and store,
on ports only; :mod:`.parse_cache` keeps parse results by content hash.
"""

from ragsage.ingestion.config import IngestionConfig
from ragsage.ingestion.pipeline import IngestionPipeline
from ragsage.ingestion.results import IngestResult, PreparedDocument

__all__ = ["IngestResult", "IngestionConfig", "IngestionPipeline", "PreparedDocument"]
