"""Adapters: the ports of :mod:`ragsage.core.ports` implemented on one technology each.

Only the runtime and the entry points build them; the services see ports.
"""
