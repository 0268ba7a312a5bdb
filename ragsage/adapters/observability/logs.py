"""Structured logs: one JSON object per line, request and job context, secrets scrubbed.

``log_context(namespace=..., job_id=...)`` binds fields to every record emitted
inside it.  The fields live in a :class:`contextvars.ContextVar`, so each thread
and each asyncio task sees its own, and a task inherits its creator's fields —
including a coroutine sent to another thread's loop with
``asyncio.run_coroutine_threadsafe`` (as :class:`ragsage.runtime.loop.LoopThread` does),
which runs in a copy of the sender's context.
``configure_logging`` installs one handler on the root logger with the context
and redaction filters, as JSON or as plain text.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TextIO

from ragsage.core.errors import ConfigurationError

REDACTED = "[redacted]"
CONTEXT_ATTRIBUTE = "ragsage_context"
_PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(context)s%(message)s"

_fields: ContextVar[Mapping[str, object]] = ContextVar(
    "ragsage_log_context", default=MappingProxyType({})
)

# Every attribute a bare LogRecord has; anything else on a record came from
# ``extra=`` and is worth printing as a field of its own.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    CONTEXT_ATTRIBUTE,
    "context",
}

_SECRETS: tuple[tuple[re.Pattern[str], str], ...] = (
    # ragsage API keys: the key id (rsk_<id>_) names the key and is kept.
    (re.compile(r"rsk_([a-z0-9]{10})_[A-Za-z0-9_-]+"), rf"rsk_\1_{REDACTED}"),
    # Any other rsk_ token; the look-ahead keeps redaction idempotent.
    (re.compile(r"rsk_(?![a-z0-9]{10}_\[)[A-Za-z0-9_-]{8,}"), f"rsk_{REDACTED}"),
    # OpenAI-shaped keys, which the providers may echo in an error body.
    (re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"), f"sk-{REDACTED}"),
    # A password in a URL's authority: scheme://user:password@host.  The
    # password may hold '@', so the match runs to the last '@' before the path.
    (
        re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"']*):[^\s/\"']*@"),
        r"\1:***@",
    ),
    # key=value secrets in query strings and DSNs.
    (
        re.compile(r"(?i)\b(password|passwd|pwd|secret|api_key|apikey|token)=[^\s&;\"',]+"),
        r"\1=***",
    ),
)


def redact(text: str) -> str:
    """``text`` with API keys and passwords replaced."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def current_log_context() -> dict[str, object]:
    """The fields bound in this thread or task right now."""
    return dict(_fields.get())


def bind_log_context(**fields: object) -> Token[Mapping[str, object]]:
    """Add ``fields`` (None values skipped) until :func:`reset_log_context` with the token."""
    merged = {**_fields.get(), **{k: v for k, v in fields.items() if v is not None}}
    return _fields.set(merged)


def reset_log_context(token: Token[Mapping[str, object]]) -> None:
    """Restore the fields bound before the matching :func:`bind_log_context`."""
    _fields.reset(token)


@contextmanager
def log_context(**fields: object) -> Iterator[dict[str, object]]:
    """Bind ``fields`` (namespace, document_id, job_id, request_id, ...) to records inside."""
    token = bind_log_context(**fields)
    try:
        yield current_log_context()
    finally:
        reset_log_context(token)


class ContextFilter(logging.Filter):
    """Stamps each record with the fields bound where it was emitted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, CONTEXT_ATTRIBUTE):
            setattr(record, CONTEXT_ATTRIBUTE, dict(_fields.get()))
        return True


class RedactingFilter(logging.Filter):
    """Rewrites a record's message and traceback so no key or password reaches a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - the handler reports a bad format string itself
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # Rendered once here, so every handler prints the scrubbed text.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, context and extra fields.

    The exception, if any, is one string field; every string value is redacted
    again here, so the formatter is safe even on a handler without the filters.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry.setdefault(key, value)
        context = getattr(record, CONTEXT_ATTRIBUTE, None)
        if not isinstance(context, Mapping):
            context = _fields.get()
        for key, value in context.items():
            entry.setdefault(key, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(_scrub(entry), default=_fallback, ensure_ascii=False)


class PlainFormatter(logging.Formatter):
    """Human-readable lines, with the bound context as ``key=value`` before the message."""

    def __init__(self) -> None:
        super().__init__(_PLAIN_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        context = getattr(record, CONTEXT_ATTRIBUTE, None)
        if not isinstance(context, Mapping):
            context = _fields.get()
        record.context = "".join(f"{key}={value} " for key, value in context.items())
        return redact(super().format(record))


class _RagsageHandler(logging.StreamHandler[TextIO]):
    """The handler ``configure_logging`` owns; recognised by type when replaced."""


def configure_logging(level: str, json: bool, *, stream: TextIO | None = None) -> logging.Handler:
    """Install one ragsage handler on the root logger (replacing an earlier one).

    Handlers installed by anything else (a test runner's, a server's) are left
    alone, so calling this twice, or from several entry points, is harmless.
    """
    chosen = _level(level)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _RagsageHandler)]:
        root.removeHandler(handler)
        handler.close()
    handler = _RagsageHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json else PlainFormatter())
    handler.addFilter(ContextFilter())
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    root.setLevel(chosen)
    return handler


def _level(name: str) -> int:
    levels = logging.getLevelNamesMapping()
    key = name.strip().upper()
    if key not in levels:
        raise ConfigurationError(
            f"RAGSAGE_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL; got {name!r}"
        )
    return levels[key]


def _scrub(value: object) -> object:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _fallback(value: object) -> str:
    # UUIDs, datetimes, paths and the like: their str() is what a reader wants.
    return redact(str(value))
