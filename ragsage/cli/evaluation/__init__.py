"""`ragsage eval`: the command, and the backends that index a dataset for it."""
