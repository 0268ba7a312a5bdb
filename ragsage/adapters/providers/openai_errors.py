"""Translating the openai SDK's exceptions into ragsage's error tree."""

from __future__ import annotations

import sys
from collections.abc import Mapping

from ragsage.adapters.providers.resilience import (
    Translate,
    detail,
    malformed,
    retry_after_seconds,
    status_error,
)
from ragsage.core.errors import PermanentProviderError, ProviderError, RetryableProviderError


def openai_translator(what: str, *, secrets: tuple[str, ...], keyless: bool) -> Translate:
    """A translator for failures of ``what`` through the openai SDK."""

    def translate(exc: BaseException) -> ProviderError | None:
        import openai

        if isinstance(exc, openai.APIStatusError):
            return status_error(
                what,
                exc.status_code,
                detail(_message(exc), secrets),
                retry_after=retry_after_seconds(exc.response.headers),
                keyless=keyless,
            )
        if isinstance(exc, openai.APITimeoutError):
            return RetryableProviderError(f"{what} timed out")
        if isinstance(exc, openai.APIConnectionError) or _transport_error(exc):
            return RetryableProviderError(f"{what} could not reach the provider")
        if isinstance(exc, openai.APIResponseValidationError):
            return malformed(what, detail(exc.message, secrets))
        if isinstance(exc, openai.APIError):
            # An error event inside a stream: the server gave up part way.
            return RetryableProviderError(
                f"{what} failed mid-reply: {detail(_message(exc), secrets)}"
            )
        if isinstance(exc, openai.OpenAIError):
            return PermanentProviderError(f"{what} failed: {detail(exc, secrets)}")
        if isinstance(exc, ValueError):
            # json.JSONDecodeError and friends, raised reading a body that is not JSON.
            return malformed(what, "the body is not valid JSON")
        return None

    return translate


def _message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _transport_error(exc: BaseException) -> bool:
    # Errors raised while a stream is being read can escape the SDK's wrapping;
    # the SDK runs on httpx2, or on httpx when that is what the process loaded.
    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.TransportError):
            return True
    return False
