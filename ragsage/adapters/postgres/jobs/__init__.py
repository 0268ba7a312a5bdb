"""The job tables in Postgres: job rows and leases, uploads, stored pages, generations.

These share the database, and the transactions, of the chunks they describe:
a job is marked succeeded in the same commit that writes its document, so a
crash can never leave one without the other.  Running a job (claim, lease,
retry) is :mod:`ragsage.jobs`; this package only reads and writes the rows.
"""
