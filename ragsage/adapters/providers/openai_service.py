"""The openai SDK client with ragsage's deadlines, retries and error translation.

One :class:`OpenAIService` serves every OpenAI role of a process (and works the
same against any server that speaks the OpenAI API); the adapters decide what to
ask, this decides how a request is sent, bounded and read back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ragsage.adapters.providers.config import (
    OPENAI_DEFAULT_BASE_URL,
    PLACEHOLDER_API_KEY,
    RetryPolicy,
)
from ragsage.adapters.providers.openai_errors import openai_translator
from ragsage.adapters.providers.replies import field_of
from ragsage.adapters.providers.resilience import call_with_retries, malformed, raise_translated
from ragsage.core.errors import ProviderError, RetryableProviderError

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionMessageParam

_T = TypeVar("_T")
_log = logging.getLogger("ragsage.adapters.providers")
TokenParameter = Literal["max_tokens", "max_completion_tokens"]


class OpenAIService:
    """Chat completions (whole or streamed) and embeddings over one ``AsyncOpenAI``.

    OpenAI's own API wants ``max_completion_tokens`` (its newer models reject
    ``max_tokens``), while OpenAI-compatible servers have long understood only
    ``max_tokens``; the cap is sent under the name the endpoint is likely to
    accept unless ``token_parameter`` says otherwise.
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        policy: RetryPolicy | None = None,
        token_parameter: TokenParameter | None = None,
    ) -> None:
        self.sdk = client
        self.policy = policy or RetryPolicy()
        official = str(client.base_url).rstrip("/") == OPENAI_DEFAULT_BASE_URL
        self.token_parameter: TokenParameter = token_parameter or (
            "max_completion_tokens" if official else "max_tokens"
        )

    @property
    def _secrets(self) -> tuple[str, ...]:
        key = self.sdk.api_key
        return (key,) if isinstance(key, str) else ()

    def _translator(self, what: str) -> Callable[[BaseException], ProviderError | None]:
        return openai_translator(
            what, secrets=self._secrets, keyless=self.sdk.api_key == PLACEHOLDER_API_KEY
        )

    async def _call(self, request: Callable[[], Awaitable[_T]], what: str) -> _T:
        return await call_with_retries(
            request,
            what=what,
            policy=self.policy,
            translate=self._translator(what),
            secrets=self._secrets,
        )

    def _caps(self, max_tokens: int | None) -> tuple[Any, Any]:
        """``max_tokens`` and ``max_completion_tokens`` arguments: one set, one omitted."""
        from openai import omit

        if max_tokens is None:
            return omit, omit
        if self.token_parameter == "max_tokens":
            return max_tokens, omit
        return omit, max_tokens

    async def embed(
        self, texts: Sequence[str], *, model: str, dimensions: int | None, what: str
    ) -> Any:
        """POST /embeddings for ``texts``, as floats (not every server speaks base64)."""
        from openai import omit

        async def request() -> Any:
            return await self.sdk.embeddings.create(
                model=model,
                input=list(texts),
                encoding_format="float",
                dimensions=omit if dimensions is None else dimensions,
            )

        return await self._call(request, what)

    async def complete(
        self,
        messages: list[ChatCompletionMessageParam],
        *,
        model: str,
        max_tokens: int | None,
        what: str,
    ) -> str:
        """The reply text of one chat completion (``""`` when the model said nothing)."""
        old_cap, new_cap = self._caps(max_tokens)

        async def request() -> Any:
            return await self.sdk.chat.completions.create(
                model=model,
                messages=messages,
                stream=False,
                max_tokens=old_cap,
                max_completion_tokens=new_cap,
            )

        reply = await self._call(request, what)
        choices = field_of(reply, "choices")
        if not isinstance(choices, list) or not choices:
            raise malformed(what, "no choices in it")
        content = field_of(field_of(choices[0], "message"), "content")
        if content is not None and not isinstance(content, str):
            raise malformed(what, "the message content is not text")
        if field_of(choices[0], "finish_reason") == "length":
            _log.warning("%s: the reply hit its token cap and is cut short", what)
        return content or ""

    async def stream(
        self,
        messages: list[ChatCompletionMessageParam],
        *,
        model: str,
        max_tokens: int | None,
        what: str,
    ) -> AsyncGenerator[str, None]:
        """The reply's text deltas as the server sends them.

        Opening the stream is retried like any call; once text has been handed
        to the caller a failure cannot be retried here (the caller would see the
        start twice), so it is raised, translated, for the job or request to
        retry whole.  Each wait for the next delta has its own deadline.
        """
        old_cap, new_cap = self._caps(max_tokens)

        async def request() -> Any:
            return await self.sdk.chat.completions.create(
                model=model,
                messages=messages,
                stream=True,
                max_tokens=old_cap,
                max_completion_tokens=new_cap,
            )

        chunks = await self._call(request, what)
        try:
            iterator = chunks.__aiter__()
            while True:
                chunk = await self._next(iterator, what)
                if chunk is None:
                    return
                choices = field_of(chunk, "choices")
                if not isinstance(choices, list):
                    raise malformed(what, "a streamed chunk has no choices")
                for choice in choices[:1]:
                    text = field_of(field_of(choice, "delta"), "content")
                    if isinstance(text, str) and text:
                        yield text
        finally:
            await chunks.close()

    async def _next(self, iterator: AsyncIterator[Any], what: str) -> Any:
        """The next streamed chunk, ``None`` at the end; failures translated."""
        try:
            async with asyncio.timeout(self.policy.timeout_seconds):
                return await anext(iterator)
        except StopAsyncIteration:
            return None
        except TimeoutError as exc:
            raise RetryableProviderError(
                f"{what} stalled: nothing arrived for {self.policy.timeout_seconds:g} s"
            ) from exc
        except ProviderError:
            raise
        except Exception as exc:
            error = self._translator(what)(exc)
            if error is None:
                raise
            raise_translated(error, exc, self._secrets)

    async def aclose(self) -> None:
        """Release the client's connection pool."""
        await self.sdk.close()
