"""One reader per format; each lazily imports its library and returns per-page Markdown."""
