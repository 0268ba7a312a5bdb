"""Which servers answered a call's reads: the primary or a streaming replica."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ReadLog:
    """The servers that answered the reads of one marked call, in order, once each."""

    servers: list[str] = field(default_factory=list)

    def note(self, server: str) -> None:
        if server not in self.servers:
            self.servers.append(server)
