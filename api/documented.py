"""What each route says about itself, for the OpenAPI document built from the routes.

A view is marked with :func:`documented`, right under its route decorator:
the summary, the replies (by model), the request body model and the query
parameters.  Paths and path parameters are not written here: they come from
the route itself (``api.openapi`` reads Flask's URL map), so a route cannot
be documented under a path it does not have, and a test fails for any route
left unmarked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

# Errors most routes can answer with; a route names its own when they differ.
COMMON_ERRORS = (400, 401, 403, 404, 413, 415, 422, 503)
ATTRIBUTE = "openapi_operation"

_View = TypeVar("_View", bound=Callable[..., Any])


@dataclass(frozen=True)
class Reply:
    """One documented response: its status, what it holds, and any other media type."""

    status: int
    description: str = "success"
    model: type[BaseModel] | None = None
    also: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    summary: str
    replies: tuple[Reply, ...]
    body: type[BaseModel] | None = None
    body_also: Mapping[str, Any] = field(default_factory=dict)
    errors: tuple[int, ...] = COMMON_ERRORS
    secured: bool = True
    query: tuple[Mapping[str, Any], ...] = ()
    models: tuple[type[BaseModel], ...] = ()


def documented(
    summary: str,
    *replies: Reply,
    body: type[BaseModel] | None = None,
    body_also: Mapping[str, Any] | None = None,
    errors: tuple[int, ...] = COMMON_ERRORS,
    secured: bool = True,
    query: tuple[Mapping[str, Any], ...] = (),
) -> Callable[[_View], _View]:
    """Attach the route's documentation to its view; the view itself is unchanged."""
    models = tuple(m for m in (body, *(r.model for r in replies)) if m is not None)
    operation = Operation(summary, replies, body, body_also or {}, errors, secured, query, models)

    def mark(view: _View) -> _View:
        setattr(view, ATTRIBUTE, operation)
        return view

    return mark


def ok(model: type[BaseModel] | None = None, status: int = 200, **kw: Any) -> Reply:
    return Reply(status, model=model, **kw)


def query_int(name: str, low: int, high: int) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": low, "maximum": high},
    }


def query_text(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": dict(schema)}


def cursor(max_length: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if max_length is not None:
        # A keyset cursor is a stored id: bounded, and never holding a NUL.
        schema.update(maxLength=max_length, pattern="^[^\\x00]*$")
    return query_text("cursor", schema)
