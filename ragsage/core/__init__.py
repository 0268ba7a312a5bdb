"""The domain: values, ports, the error tree and the text rules every layer shares.

No I/O and nothing else of ragsage is imported here; every other package may
import this one.
"""
