"""ragsage: a self-hostable retrieval-augmented-generation engine."""
