"""The one error tree every ragsage component raises from.

    RagsageError
    ├── InputError                 the caller's input is wrong; retrying cannot help
    │   ├── DocumentError          a file cannot be ingested (names the file)
    │   │   ├── EmptyDocument      zero bytes, or no text anywhere in it
    │   │   ├── UnsupportedFormat  no parser reads this kind of file
    │   │   └── ParseError         the parser started and failed (corrupt, encrypted, ...)
    │   ├── InvalidRequest         a query or option out of range
    │   │   └── UnsupportedWidth   a vector width this install has no index for
    │   └── Conflict               well formed, but the current state refuses it
    ├── ProviderError              a model provider failed
    │   ├── RetryableProviderError rate limits, 5xx, timeouts, lost connections
    │   └── PermanentProviderError bad credentials, rejected request, malformed reply
    ├── StorageError               a store failed
    │   ├── StorageUnavailable     unreachable, or the connection was lost (retryable)
    │   └── StorageTimeout         a statement ran past its time limit and was cancelled
    ├── BrokerUnavailable          the job queue cannot take a message now (retryable)
    └── ConfigurationError         settings that cannot work

``retryable`` is the one attribute a job runner needs: it decides between backing
off and failing the job with the message.  Vendor exceptions are translated into
this tree with ``raise ... from exc`` so the cause is kept for logs but never
shown to a client: :func:`client_message` is the one rule for what a client
(an HTTP caller, a job's reader, a streamed answer) may be told.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class RagsageError(Exception):
    """Base of every error ragsage raises on purpose."""

    retryable: bool = False


class InputError(RagsageError):
    """The input is wrong; the same input will fail the same way."""


class DocumentError(InputError):
    """A document cannot be ingested; the message starts with its file name."""

    def __init__(self, filename: str, reason: str) -> None:
        self.filename = filename
        self.reason = reason
        super().__init__(f"{filename}: {reason}")


class EmptyDocument(DocumentError):
    """The file has no bytes, or no text survived parsing."""


class UnsupportedFormat(DocumentError):
    """No parser reads this kind of file."""


class ParseError(DocumentError):
    """The file claims a format the parser reads, but reading it failed."""


class InvalidRequest(InputError):
    """A request option is missing, malformed or out of range."""


class UploadTooLarge(InvalidRequest):
    """A file over the upload limit; the message names the limit."""


class UnsupportedWidth(InvalidRequest):
    """A vector width with no HNSW index here; the message names those that have one."""


class Forbidden(InputError):
    """The caller's key may not do this (an access list beyond its principals, say)."""


class NotFound(InputError):
    """The thing named does not exist, or the caller's key may not see it (both read alike)."""


class Conflict(InputError):
    """A well-formed request the current state refuses (it may succeed once that changes)."""


class QuotaExceeded(InputError):
    """The namespace would pass one of its quotas: the message names it and the usage."""

    def __init__(
        self, quota: str, limit: int, usage: int | None, unit: str, detail: str = ""
    ) -> None:
        """``usage`` None leaves the count out: a key bound to principals may not
        learn how much the documents it cannot read hold (docs/access.md)."""
        self.quota, self.limit, self.usage, self.unit = quota, limit, usage, unit
        held = "it is full" if usage is None else f"it holds {usage:,}"
        message = f"the namespace's {quota} quota is {limit:,} {unit} and {held}"
        super().__init__(f"{message}{'; ' + detail if detail else ''}")


class ProviderError(RagsageError):
    """A model provider call failed."""


class RetryableProviderError(ProviderError):
    """A transient provider failure worth retrying with backoff."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class PermanentProviderError(ProviderError):
    """A provider failure that retrying will not fix."""


class StorageError(RagsageError):
    """A store operation failed."""


class StorageUnavailable(StorageError):
    """The database was unreachable or dropped the connection; trying again may work."""

    retryable = True


class StorageTimeout(StorageError):
    """The database cancelled a statement that ran past its time limit."""


class MarksUnavailable(RagsageError):
    """The store of one-time marks (spent sign-in codes) could not be asked; nothing was
    marked."""


class BrokerUnavailable(RagsageError):
    """The job queue's broker could not be reached; the message was not sent."""

    retryable = True


class ConfigurationError(RagsageError):
    """Settings that cannot produce a working system."""


def client_message(exc: BaseException) -> str | None:
    """What a client may read of ``exc``: its message if it is one of ours, else None.

    ragsage writes its own errors for whoever caused them (they name the file,
    the option or the limit, never a secret or a server's internals); any other
    exception may quote a driver, an SDK or a path, so only its kind may be named.
    """
    return str(exc) if isinstance(exc, RagsageError) else None


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, what caused it, and the members of exception groups, each once."""
    pending, seen = [exc], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(c for c in (current.__cause__, current.__context__) if c is not None)


def json_type(value: Any) -> str:
    """What JSON calls the kind of ``value``, with its article."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__
