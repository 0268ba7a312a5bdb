"""The modules ``import ragsage`` must not load (DESIGN.md rule 1), for the import-guard tests."""

HEAVY = (
    "sqlalchemy",
    "celery",
    "flask",
    "numpy",
    "voyageai",
    "openai",
    "torch",
    "tree_sitter",
    # Model runtimes and file-type detectors the adapters reference keeps out too.
    "transformers",
    "onnxruntime",
    "tokenizers",
    "magika",
    # The request models validate on first use; a script that only indexes never pays.
    "pydantic",
)
