"""The evaluation datasets' builders: ``python -m evaluation_data <set> [options]``.

Each set is built from pinned inputs (package archives checked against their
SHA-256, or the files of this machine) into the QA-span layout that ``ragsage
eval`` reads (docs/evaluation-dataset.md).  The hand-written and frozen question
files the builders read live beside the modules.  The package is a tool of the
checkout, not part of the installed ``ragsage``.
"""
