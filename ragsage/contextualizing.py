"""``ragsage.contextualizing``: the heading-window contextualizer, by its documented path.

It lives in :mod:`ragsage.adapters.parsing.contextualizing`.
"""

from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer

__all__ = ["HeadingWindowContextualizer"]
