"""The in-memory stores under the names the tests and the adapters reference know.

They are :mod:`ragsage.adapters.memory`'s stores, not doubles: the same classes.
"""

from ragsage.adapters.memory import (
    MemoryCache as FakeCache,
)
from ragsage.adapters.memory import (
    MemoryDocumentStore as FakeDocumentStore,
)
from ragsage.adapters.memory import (
    MemoryLexicalStore as FakeLexicalStore,
)
from ragsage.adapters.memory import (
    MemoryVectorStore as FakeVectorStore,
)

__all__ = ["FakeCache", "FakeDocumentStore", "FakeLexicalStore", "FakeVectorStore"]
