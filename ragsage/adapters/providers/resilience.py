"""One way to call a provider: a deadline per attempt, few retries, translated errors.

Every adapter funnels its SDK calls through :func:`call_with_retries`, which is
why the SDKs' own retry loops are switched off: backoff, ``Retry-After`` and the
mapping onto :mod:`ragsage.core.errors` then behave the same for every provider.

    HTTP 429, 408, 5xx, timeouts, lost connections -> RetryableProviderError
    HTTP 400, 401, 403, 404, 422, malformed replies  -> PermanentProviderError
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from email.utils import parsedate_to_datetime
from typing import NoReturn, TypeVar

from ragsage.adapters.providers.config import PLACEHOLDER_API_KEY, RetryPolicy
from ragsage.core.errors import PermanentProviderError, ProviderError, RetryableProviderError

_T = TypeVar("_T")
_log = logging.getLogger("ragsage.adapters.providers")
_DETAIL_CHARS = 300
REDACTED = "[redacted]"

Translate = Callable[[BaseException], ProviderError | None]


async def call_with_retries(
    operation: Callable[[], Awaitable[_T]],
    *,
    what: str,
    policy: RetryPolicy,
    translate: Translate,
    secrets: Iterable[str] = (),
) -> _T:
    """Run ``operation`` under ``policy``; vendor failures surface as ragsage errors."""
    secrets = tuple(secrets)
    attempts = policy.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            async with asyncio.timeout(policy.timeout_seconds):
                return await operation()
        except ProviderError:
            raise  # already ours (a reply the adapter judged malformed)
        except Exception as exc:
            error = _translated(exc, what=what, policy=policy, translate=translate)
            delay = _retry_delay(error, attempt, attempts, policy)
            if delay is None:
                if isinstance(error, RetryableProviderError) and attempt == attempts > 1:
                    error = RetryableProviderError(
                        f"{error} (gave up after {attempt} attempts)",
                        retry_after=error.retry_after,
                    )
                raise_translated(error, exc, secrets)
            _log.warning(
                "%s; retrying in %.2f s (attempt %d of %d)",
                error,
                delay,
                attempt,
                attempts,
            )
            await asyncio.sleep(delay)
    raise AssertionError("the retry loop always returns or raises")


def _translated(
    exc: Exception,
    *,
    what: str,
    policy: RetryPolicy,
    translate: Translate,
) -> ProviderError:
    if isinstance(exc, TimeoutError):
        return RetryableProviderError(f"{what} timed out after {policy.timeout_seconds:g} s")
    error = translate(exc)
    if error is None:
        raise exc
    return error


def _retry_delay(
    error: ProviderError, attempt: int, attempts: int, policy: RetryPolicy
) -> float | None:
    """Seconds to sleep before the next attempt, or ``None`` to stop retrying."""
    if not isinstance(error, RetryableProviderError) or attempt >= attempts:
        return None
    if error.retry_after is not None:
        # A provider asking for a longer pause than we are willing to block for is
        # better served by the job runner's own, longer backoff.
        return error.retry_after if error.retry_after <= policy.max_sleep_seconds else None
    # Jitter spreads the retries of many workers that failed at the same moment.
    backoff = policy.backoff_seconds * 2.0 ** (attempt - 1) * random.uniform(0.5, 1.0)
    return min(backoff, policy.max_sleep_seconds)


def raise_translated(
    error: ProviderError, cause: BaseException, secrets: tuple[str, ...]
) -> NoReturn:
    """Raise ``error`` from ``cause``, unless the vendor's own exception quotes a key."""
    if _quotes_secret(cause, secrets):
        # The SDK's message would carry the key into any traceback that gets logged.
        raise error from None
    raise error from cause


def _quotes_secret(exc: BaseException, secrets: tuple[str, ...]) -> bool:
    texts = [str(exc), repr(exc)]
    texts.extend(str(value) for value in getattr(exc, "__dict__", {}).values())
    return any(secret in text for secret in _real(secrets) for text in texts)


def _real(secrets: Iterable[str]) -> list[str]:
    # Very short strings would redact innocent text; the placeholder is not secret.
    return [s for s in secrets if len(s) >= 6 and s != PLACEHOLDER_API_KEY]


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every configured secret replaced."""
    for secret in _real(secrets):
        text = text.replace(secret, REDACTED)
    return text


# The SDKs log response bodies at INFO/DEBUG; a provider that quotes the key in
# an error body would otherwise put it into the process's logs.
_SDK_LOGGERS = (
    "voyage",
    "openai",
    "openai._base_client",
    "openai._response",
    "openai._legacy_response",
    "httpx2",
    "httpx",
)


class _RedactingFilter(logging.Filter):
    """Rewrites any SDK log record that mentions a configured secret."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            if any(secret in message for secret in self.secrets):
                record.msg, record.args = redact(message, self.secrets), None
        return True


_REDACTING_FILTER = _RedactingFilter()


def guard_sdk_logs(secrets: Iterable[str]) -> None:
    """Keep ``secrets`` out of what the provider SDKs log (idempotent)."""
    _REDACTING_FILTER.secrets.update(_real(secrets))
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _REDACTING_FILTER not in logger.filters:
            logger.addFilter(_REDACTING_FILTER)


def detail(text: object, secrets: Iterable[str]) -> str:
    """A provider's error text, shortened to one line and redacted."""
    flat = " ".join(str(text).split())
    flat = redact(flat, secrets)
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"


def status_error(
    what: str,
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    keyless: bool = False,
) -> ProviderError:
    """The ragsage error for an HTTP status a provider answered with."""
    suffix = f": {message}" if message else ""
    if status == 429:
        return RetryableProviderError(
            f"{what} was rate limited (HTTP 429){suffix}", retry_after=retry_after
        )
    if status == 408 or status >= 500:
        return RetryableProviderError(
            f"{what} failed on the provider's side (HTTP {status}){suffix}",
            retry_after=retry_after,
        )
    if status in (401, 403):
        hint = " (no API key is configured for this provider)" if keyless else ""
        return PermanentProviderError(
            f"{what} was refused: the API key is invalid or lacks access "
            f"(HTTP {status}){hint}{suffix}"
        )
    return PermanentProviderError(f"{what} was rejected (HTTP {status}){suffix}")


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The pause a provider asked for, from ``retry-after-ms`` or ``Retry-After``."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def malformed(what: str, problem: str) -> PermanentProviderError:
    """The error for a reply that does not have the shape the provider documents."""
    return PermanentProviderError(f"{what} returned a malformed reply: {problem}")
