"""What one search or answer may cost: caps on its size, and answers at once per key.

The request contract has its own hard ceilings (a top_k of at most 100, ...);
an operator may set lower ones for a shared deployment.  A request over a cap
is refused with a 400 that names the cap and its setting; a key already
streaming its allowed number of answers is refused with a 429 until one ends.
Answers at once are counted in the limits' Redis, so every API process shares
the count, and like the rates they go unchecked when that Redis is away.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from api.errors import ApiError
from ragsage.core.scopes import Scope
from ragsage.query.options import RetrievalOptions
from ragsage.runtime import Runtime
from ragsage.runtime.serving import set_search_timeout
from ragsage.settings import Settings

_log = logging.getLogger(__name__)
# A count left by a process that died mid-answer expires after this long.
_ANSWER_TTL_SECONDS = 600


def check_options(settings: Settings, options: RetrievalOptions) -> None:
    """Refuse a search asking for more results or neighbours than the deployment allows."""
    if options.top_k > settings.max_top_k:
        raise ApiError(
            400,
            "limit_exceeded",
            f"top_k {options.top_k} is over this deployment's cap of {settings.max_top_k} "
            "(RAGSAGE_MAX_TOP_K)",
        )
    widest = max(options.chunks_above, options.chunks_below)
    if widest > settings.max_neighbours:
        raise ApiError(
            400,
            "limit_exceeded",
            f"{widest} neighbouring chunks is over this deployment's cap of "
            f"{settings.max_neighbours} (RAGSAGE_MAX_NEIGHBOURS)",
        )


def check_history(settings: Settings, turns: int) -> None:
    if turns > settings.max_history_turns:
        raise ApiError(
            400,
            "limit_exceeded",
            f"a history of {turns} turns is over this deployment's cap of "
            f"{settings.max_history_turns} (RAGSAGE_MAX_HISTORY_TURNS)",
        )


class AnswersAtOnce:
    """How many answers each key is producing now, across every API process."""

    def __init__(self, settings: Settings) -> None:
        self.cap = settings.answers_per_key
        url = settings.limits_url()
        self._client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def take(self, key_id: str) -> str | None:
        """Count one more answer for the key; the slot to give back, or None if unchecked."""
        if not self.cap:
            return None
        slot = f"ragsage:answers:{key_id}"
        try:
            with self._client.pipeline() as pipe:
                pipe.incr(slot)
                pipe.expire(slot, _ANSWER_TTL_SECONDS)
                now = int(pipe.execute()[0])
        except (redis.RedisError, OSError) as exc:
            _log.warning("answers at once are not counted: %s", type(exc).__name__)
            return None
        if now > self.cap:
            self.give_back(slot)
            raise ApiError(
                429,
                "rate_limited",
                f"this key is already producing {self.cap} answers at once, this deployment's "
                "cap (RAGSAGE_ANSWERS_PER_KEY); retry when one has finished",
            )
        return slot

    def give_back(self, slot: str | None) -> None:
        if slot is None:
            return
        try:
            self._client.decr(slot)
        except (redis.RedisError, OSError):
            pass  # the count expires on its own

    @contextmanager
    def held(self, key_id: str) -> Iterator[str | None]:
        slot = self.take(key_id)
        try:
            yield slot
        finally:
            self.give_back(slot)

    def close(self) -> None:
        self._client.close()


class SearchTimeouts:
    """Each namespace's statement timeout for its searches and answers.

    Read from the namespace's settings row at most every ``ttl`` seconds per
    process, and handed to the database's one-message reads, which is how
    searches read.  A namespace without its own uses ``RAGSAGE_SEARCH_TIMEOUT_MS``
    (0: the sessions' own timeout).  A search past it answers 503 with
    ``Retry-After``, as any statement timeout does.
    """

    def __init__(self, settings: Settings, runtime: Runtime, ttl: float = 30.0) -> None:
        self.default, self.runtime, self.ttl = settings.search_timeout_ms, runtime, ttl
        self._until: dict[str, float] = {}

    def stale(self, scope: Scope) -> bool:
        """Whether the namespace's timeout must be read again (checked without the loop)."""
        return self._until.get(scope.namespace, 0.0) < time.monotonic()

    async def refresh(self, scope: Scope) -> None:
        usage = self.runtime.management.usage
        chosen = await usage.search_timeout_ms(scope, self.default)
        set_search_timeout(self.runtime, scope.namespace, chosen)
        self._until[scope.namespace] = time.monotonic() + self.ttl
