"""Webhook delivery: secrets, signatures and the guarded HTTP sender."""
