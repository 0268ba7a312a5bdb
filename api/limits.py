"""Request rates per key and per namespace, counted in Redis so every API process shares them.

Searches and answers are counted apart from uploads and management calls.  The
counting is the ``limits`` library's (a sliding window per limit, kept in
Redis); this module only says which limits a request is under and what a
refusal looks like.  When the limits' Redis cannot be reached, requests go
through: a warning is logged (at most every few seconds), a metric counts it,
and for a short pause no request waits on the unreachable server again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import redis
from flask import Response
from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import RedisStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from api.errors import error_response
from ragsage.core.errors import ConfigurationError
from ragsage.runtime.serving import refusal_counts
from ragsage.settings import Settings

_log = logging.getLogger(__name__)
# Endpoints counted as searches and answers; every other /v1 route is "other".
SEARCH_ENDPOINTS = frozenset(
    {"query.search", "query.query", "query.fetch_chunk", "query.sources", "chat.completions"}
)
# After the limits' Redis failed, requests skip it for this long (fail open).
_PAUSE_SECONDS = 5.0
# Keys and namespaces refused lately that one process keeps in mind at most.
_REMEMBERED_REFUSALS = 10_000
# (kind, per, who): whose count under which limit.
_Who = tuple[str, str, str]
_NOT_REFUSED = (0.0, 0.0)
# The kind of the failed-key budget: lookups of credentials the API cannot check itself.
UNKNOWN_KEYS = "unknown-keys"


@dataclass(frozen=True, slots=True)
class Limit:
    """One configured rate: what it counts, whose requests, and how many."""

    name: str  # "search per key", ...
    kind: str  # "search" or "other"
    per: str  # "key" or "namespace"
    item: RateLimitItem
    variable: str


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request over one of its limits, and when it may come back."""

    limit: Limit
    retry_after: int
    reset_in: int

    @property
    def message(self) -> str:
        item = self.limit.item
        unit = (
            f"{item.multiples} {item.GRANULARITY.name}"
            if item.multiples > 1
            else (item.GRANULARITY.name)
        )
        what = {
            "search": "searches and answers",
            UNKNOWN_KEYS: "lookups of credentials this server cannot check itself",
        }.get(self.limit.kind, "requests")
        return (
            f"rate limit '{self.limit.name}' reached: at most {item.amount} {what} per {unit} "
            f"for this {self.limit.per} ({self.limit.variable}); retry in {self.retry_after} s"
        )

    def headers(self) -> dict[str, str]:
        return {
            "Retry-After": str(self.retry_after),
            "RateLimit-Limit": str(self.limit.item.amount),
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": str(self.reset_in),
            "RateLimit-Policy": (f"{self.limit.item.amount};w={self.limit.item.get_expiry()}"),
        }


class RateLimited(Exception):
    """A request over one of its rate limits (answered 429 before any other work)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def too_many(refusal: Refusal) -> Response:
    """429 naming the limit, with when to come back."""
    response = error_response(429, "rate_limited", refusal.message)
    response.headers.update(refusal.headers())
    return response


def configured_limits(settings: Settings) -> tuple[Limit, ...]:
    """The limits the settings ask for; a malformed one is refused with its variable's name."""
    wanted = (
        (
            "search per key",
            "search",
            "key",
            settings.rate_limit_search_key,
            "RAGSAGE_RATE_LIMIT_SEARCH_KEY",
        ),
        (
            "search per namespace",
            "search",
            "namespace",
            settings.rate_limit_search_namespace,
            "RAGSAGE_RATE_LIMIT_SEARCH_NAMESPACE",
        ),
        (
            "requests per key",
            "other",
            "key",
            settings.rate_limit_other_key,
            "RAGSAGE_RATE_LIMIT_OTHER_KEY",
        ),
        (
            "requests per namespace",
            "other",
            "namespace",
            settings.rate_limit_other_namespace,
            "RAGSAGE_RATE_LIMIT_OTHER_NAMESPACE",
        ),
        (
            "unknown keys per client address",
            UNKNOWN_KEYS,
            "client address",
            settings.rate_limit_unknown_keys,
            "RAGSAGE_RATE_LIMIT_UNKNOWN_KEYS",
        ),
    )
    found = []
    for name, kind, per, text, variable in wanted:
        if text.strip().lower() in ("", "none"):
            continue  # from the environment, only "none" says so: empty means the default
        try:
            item = parse(text)
        except ValueError:
            raise ConfigurationError(
                f"{variable} must read like '50/second' or '1000 per minute'; got {text!r}"
            ) from None
        found.append(Limit(name, kind, per, item, variable))
    return tuple(found)


class _Refusals(Protocol):
    """Each namespace's refusals by limit, kept where every API process adds to them."""

    def add(self, namespace: str, limit_name: str) -> None: ...

    def counts(self, namespace: str) -> dict[str, int]: ...

    def stop(self) -> None: ...


class RequestLimits:
    """Checks each request against its limits; fails open when Redis is away."""

    def __init__(
        self,
        settings: Settings,
        on_unavailable: Callable[[], None] = lambda: None,
        on_refused: Callable[[Limit, str], None] = lambda limit, namespace: None,
    ) -> None:
        self.limits = configured_limits(settings)
        # Looked up on every request: by (kind, per).
        self._by_scope = {(limit.kind, limit.per): limit for limit in self.limits}
        self._storage = RedisStorage(
            settings.limits_url(),
            key_prefix="ragsage:limits",
            wrap_exceptions=True,
            socket_timeout=0.5,
            socket_connect_timeout=0.5,
        )
        self._limiter = SlidingWindowCounterRateLimiter(self._storage)
        # The refusal counts go through the limiter's own connection pool.
        self._client: redis.Redis = self._storage.storage
        self._on_unavailable, self._on_refused = on_unavailable, on_refused
        self._tally: _Refusals = refusal_counts(self._client, self._unavailable)
        self._paused_until = 0.0
        self._lock = threading.Lock()
        # (kind, per, who) refused lately -> (until when their searches are counted
        # before their work, until when they are surely over their limit), monotonic.
        self._refused: dict[_Who, tuple[float, float]] = {}

    def may_count_beside(self, endpoint: str | None, key_digest: str, namespace: str) -> bool:
        """Whether a search's counts may run beside its work instead of before it.

        Counting costs a Redis round trip; made while the search runs, it adds
        almost nothing to its time.  A search found over a limit is then
        thrown away, which wastes its database work, so a key or namespace
        refused within its limit's window is counted first again: a flood pays
        for its own refusals and runs no search it is not allowed.
        """
        if endpoint not in SEARCH_ENDPOINTS or not self._by_scope:
            return False
        now = time.monotonic()
        return (
            self._refused.get(("search", "key", key_digest), _NOT_REFUSED)[0] <= now
            and self._refused.get(("search", "namespace", namespace), _NOT_REFUSED)[0] <= now
        )

    def check_both(self, endpoint: str | None, key_digest: str, namespace: str) -> Refusal | None:
        """The key's limit and its namespace's, both counted in one round trip."""
        kind = "search" if endpoint in SEARCH_ENDPOINTS else "other"
        key_limit = self._by_scope.get((kind, "key"))
        namespace_limit = self._by_scope.get((kind, "namespace"))
        now = time.monotonic()
        if (
            key_limit is None
            or namespace_limit is None
            or now < self._paused_until
            or self._over_until((kind, "key", key_digest)) > now
            or self._over_until((kind, "namespace", namespace)) > now
        ):
            return self.check_key(endpoint, key_digest, namespace) or self.check_namespace(
                endpoint, namespace
            )
        try:
            key_ok, namespace_ok = self._hit_together(
                (key_limit, key_digest), (namespace_limit, namespace)
            )
            if key_ok and namespace_ok:
                return None
            if not key_ok:
                return self._refuse(kind, "key", key_digest, key_limit, namespace)
            return self._refuse(kind, "namespace", namespace, namespace_limit, namespace)
        except (StorageError, redis.RedisError, OSError) as exc:
            self._unavailable(exc)
            return None

    def _hit_together(self, *counts: tuple[Limit, str]) -> list[bool]:
        """``SlidingWindowCounterRateLimiter.hit`` of each (limit, who), in one pipeline.

        The library's own script and keys, sent together: a search's counts cost
        one round trip, not one each.  (The keys are built by the storage's
        helpers; ``test_counts_made_together_are_the_librarys_own`` fails if an
        upgrade of ``limits`` moves them.)  The namespace is counted even when
        the key is over, once: after that the key is counted first, alone.
        """
        storage = self._storage
        pipeline = self._client.pipeline(transaction=False)
        for limit, who in counts:
            key = limit.item.key_for(limit.kind, limit.per, who)
            storage.lua_acquire_sliding_window(
                keys=[
                    storage.prefixed_key(storage._previous_window_key(key)),
                    storage.prefixed_key(storage._current_window_key(key)),
                ],
                args=[limit.item.amount, limit.item.get_expiry(), 1],
                client=pipeline,
            )
        return [bool(acquired) for acquired in pipeline.execute()]

    def check_key(
        self, endpoint: str | None, key_digest: str, namespace: str | None
    ) -> Refusal | None:
        """The key's own limit, checked before the key is looked up at all.

        Counting by the key's hash, before authentication, makes a refusal
        cost one Redis call and no database work, and tells the holder of an
        unknown or revoked key nothing a 401 would not.  ``namespace`` (the
        key's, if this process has seen it) only attributes the refusal.
        """
        return self._check(endpoint, "key", key_digest, namespace)

    def check_unknown_key(self, address: str) -> Refusal | None:
        """Spend one of ``address``'s lookups of credentials the API cannot check itself.

        Counted before the lookup, whatever it finds: a key that proves to be
        valid is remembered by the process and never counted again, while a
        random or forged one costs its sender a share of a small budget
        instead of a database statement each.
        """
        return self._count(UNKNOWN_KEYS, "client address", address, None)

    def check_namespace(self, endpoint: str | None, namespace: str) -> Refusal | None:
        """The namespace's limit, once the key has named its namespace."""
        return self._check(endpoint, "namespace", namespace, namespace)

    def _check(
        self, endpoint: str | None, per: str, who: str, namespace: str | None
    ) -> Refusal | None:
        kind = "search" if endpoint in SEARCH_ENDPOINTS else "other"
        return self._count(kind, per, who, namespace)

    def _count(self, kind: str, per: str, who: str, namespace: str | None) -> Refusal | None:
        limit = self._by_scope.get((kind, per))
        if limit is None or time.monotonic() < self._paused_until:
            return None
        try:
            if self._over_until((kind, per, who)) <= time.monotonic():
                if self._limiter.hit(limit.item, limit.kind, limit.per, who):
                    return None
            return self._refuse(kind, per, who, limit, namespace)
        except (StorageError, redis.RedisError, OSError) as exc:
            self._unavailable(exc)
            return None

    def _refuse(
        self, kind: str, per: str, who: str, limit: Limit, namespace: str | None
    ) -> Refusal:
        """The refusal of a request over ``limit``: from memory, or asking Redis when to return."""
        full_for = self._over_until((kind, per, who)) - time.monotonic()
        if full_for <= 0:
            asked = time.monotonic()
            stats = self._limiter.get_window_stats(limit.item, limit.kind, limit.per, who)
            full_for = stats.reset_time - time.time()
            if stats.remaining == 0:  # not freed between the two calls
                # Counted from before the question, so never past Redis's own reset.
                self._remember_refusal(kind, per, who, limit, asked + full_for)
        self._on_refused(limit, namespace or "")
        if namespace is not None:
            self._tally.add(namespace, limit.name)
        wait = max(1, math.ceil(full_for))
        return Refusal(limit, retry_after=wait, reset_in=wait)

    def _remember_refusal(
        self, kind: str, per: str, who: str, limit: Limit, full_until: float
    ) -> None:
        """Keep in mind that ``who`` is over ``limit``, and until when (monotonic) surely so.

        Until the window's next reset no request of ``who`` can pass (every
        other process's requests only add to the count), so until then this
        process refuses without asking Redis: a flood's refusals cost the
        Redis server almost nothing and the API's threads little.
        """
        now = time.monotonic()
        with self._lock:
            if len(self._refused) >= _REMEMBERED_REFUSALS:
                # Many keys flooding at once: forget the ones whose window has passed,
                # then, if still too many, the oldest.
                live = sorted((t[0], k) for k, t in self._refused.items() if t[0] > now)
                self._refused = {k: self._refused[k] for _, k in live[-_REMEMBERED_REFUSALS // 2 :]}
            self._refused[(kind, per, who)] = (now + limit.item.get_expiry(), full_until)

    def _over_until(self, who: _Who) -> float:
        """Until when (monotonic) ``who`` is surely over its limit; 0 if not known to be."""
        return self._refused.get(who, _NOT_REFUSED)[1]

    def refusals(self, namespace: str) -> dict[str, int] | None:
        """Requests of ``namespace`` refused by each limit so far; None if Redis is away.

        Another API process's refusals of the last few milliseconds may not be in yet.
        """
        try:
            return self._tally.counts(namespace)
        except (redis.RedisError, OSError):
            return None

    def close(self) -> None:
        self._tally.stop()
        self._client.close()

    def _unavailable(self, exc: BaseException) -> None:
        with self._lock:
            first = time.monotonic() >= self._paused_until
            self._paused_until = time.monotonic() + _PAUSE_SECONDS
        self._on_unavailable()
        if first:
            _log.warning(
                "rate limits are not enforced for %.0f s: their Redis is unreachable (%s)",
                _PAUSE_SECONDS,
                type(getattr(exc, "storage_error", exc)).__name__,
            )
