"""Translating the voyageai SDK's exceptions into ragsage's error tree."""

from __future__ import annotations

from ragsage.adapters.providers.resilience import (
    Translate,
    detail,
    malformed,
    retry_after_seconds,
    status_error,
)
from ragsage.core.errors import PermanentProviderError, ProviderError, RetryableProviderError


def voyage_translator(what: str, *, secrets: tuple[str, ...], keyless: bool) -> Translate:
    """A translator for failures of ``what`` through the voyageai SDK."""

    def translate(exc: BaseException) -> ProviderError | None:
        import aiohttp
        from voyageai import error as voyage

        if isinstance(exc, voyage.VoyageError):
            return _from_sdk(exc, what, secrets, keyless)
        if isinstance(exc, aiohttp.ClientError | OSError):
            return RetryableProviderError(f"{what} could not reach the provider: {exc}")
        if isinstance(exc, KeyError | AttributeError | TypeError | ValueError | IndexError):
            # Raised while the SDK unpacks a reply that lacks the documented fields.
            return malformed(what, f"{type(exc).__name__} while reading it")
        return None

    return translate


def _from_sdk(
    exc: BaseException, what: str, secrets: tuple[str, ...], keyless: bool
) -> ProviderError:
    from voyageai import error as voyage

    assert isinstance(exc, voyage.VoyageError)
    message = detail(exc.user_message or "", secrets)
    status = exc.http_status
    if isinstance(status, int) and status >= 400:
        return status_error(
            what,
            status,
            message,
            retry_after=retry_after_seconds(exc.headers),
            keyless=keyless,
        )
    if isinstance(exc, voyage.Timeout):
        return RetryableProviderError(f"{what} timed out")
    if isinstance(exc, voyage.APIConnectionError | voyage.TryAgain):
        return RetryableProviderError(f"{what} could not reach the provider")
    if isinstance(status, int):
        # A success status whose body the SDK could not decode as JSON.
        return malformed(what, f"HTTP {status} with a body that is not JSON")
    return PermanentProviderError(f"{what} failed: {message or type(exc).__name__}")
