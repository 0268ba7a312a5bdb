"""Services ragsage can start by itself for development, tests and the one-command start.

Production points at its own Postgres and Redis; these exist so that nobody
needs Docker or root setup to try ragsage or run its tests.
"""
