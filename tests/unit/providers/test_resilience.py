from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from ragsage.adapters.providers import ProviderConfig
from ragsage.adapters.providers.config import RetryPolicy
from ragsage.adapters.providers.resilience import (
    call_with_retries,
    detail,
    redact,
    retry_after_seconds,
    status_error,
)
from ragsage.core.errors import (
    ConfigurationError,
    PermanentProviderError,
    ProviderError,
    RetryableProviderError,
)

FAST = RetryPolicy(timeout_seconds=1.0, max_retries=2, backoff_seconds=0.0, max_sleep_seconds=1.0)


class Flaky(Exception):
    pass


def translate(exc: BaseException) -> ProviderError | None:
    if isinstance(exc, Flaky):
        return RetryableProviderError(str(exc))
    return None


async def test_a_transient_failure_is_retried_until_it_succeeds() -> None:
    calls = []

    async def operation() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Flaky("try again")
        return "done"

    assert await call_with_retries(operation, what="t", policy=FAST, translate=translate) == "done"
    assert len(calls) == 3


async def test_retries_run_out_into_a_retryable_error_with_the_cause() -> None:
    async def operation() -> str:
        raise Flaky("still down")

    with pytest.raises(RetryableProviderError, match="gave up after 3 attempts") as raised:
        await call_with_retries(operation, what="t", policy=FAST, translate=translate)
    assert isinstance(raised.value.__cause__, Flaky)


async def test_an_untranslated_exception_is_not_disguised() -> None:
    async def operation() -> str:
        raise KeyError("a bug of ours")

    with pytest.raises(KeyError):
        await call_with_retries(operation, what="t", policy=FAST, translate=translate)


async def test_each_attempt_has_a_deadline() -> None:
    import asyncio

    async def operation() -> str:
        await asyncio.sleep(5)
        return "late"

    policy = RetryPolicy(timeout_seconds=0.05, max_retries=1, backoff_seconds=0.0)
    started = time.monotonic()
    with pytest.raises(RetryableProviderError, match="timed out after 0.05 s"):
        await call_with_retries(operation, what="t", policy=policy, translate=translate)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, PermanentProviderError),
        (401, PermanentProviderError),
        (403, PermanentProviderError),
        (404, PermanentProviderError),
        (422, PermanentProviderError),
        (408, RetryableProviderError),
        (429, RetryableProviderError),
        (500, RetryableProviderError),
        (503, RetryableProviderError),
    ],
)
def test_statuses_map_onto_the_error_tree(status: int, kind: type[ProviderError]) -> None:
    error = status_error("Embeddings", status, "detail")
    assert type(error) is kind
    assert f"HTTP {status}" in str(error) and str(error).startswith("Embeddings")


def test_retry_after_in_seconds_milliseconds_and_dates() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = retry_after_seconds({"retry-after": formatdate(time.time() + 30, usegmt=True)})
    assert later is not None and 25 < later <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_secrets_are_redacted_and_details_bounded() -> None:
    assert redact("key sk-abcdef123 leaked", ["sk-abcdef123"]) == "key [redacted] leaked"
    assert redact("short", ["ab"]) == "short"  # too short to be a key; redacting would garble
    assert len(detail("x" * 1000, [])) == 300
    assert detail("a\n  b", []) == "a b"


def test_config_validates_and_hides_its_keys() -> None:
    config = ProviderConfig(openai_api_key="sk-live-key", voyage_api_key="pa-live-key")
    assert "live-key" not in repr(config)
    assert config.retry_policy.max_retries == 2
    with pytest.raises(ConfigurationError):
        ProviderConfig(max_retries=-1)
    with pytest.raises(ConfigurationError):
        ProviderConfig(timeout_seconds=0)
