"""Flask query API (entry point; filled in by the API issue)."""
