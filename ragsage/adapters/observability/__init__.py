"""Operability: structured logs with request/job context, and tracing to OpenTelemetry.

``ragsage.adapters.observability.logs`` is standard library only.  The OpenTelemetry
adapter lives in ``ragsage.adapters.observability.otel`` and is imported only by the
processes configured to use it, so importing this package loads no SDK.
"""

from ragsage.adapters.observability.logs import (
    JsonFormatter,
    configure_logging,
    current_log_context,
    log_context,
    redact,
)

__all__ = [
    "JsonFormatter",
    "configure_logging",
    "current_log_context",
    "log_context",
    "redact",
]
