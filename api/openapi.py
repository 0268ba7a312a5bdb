"""The OpenAPI 3.1 document, generated from the routes and the models that validate them.

Every route of the app is read from Flask's URL map: its path and path
parameters from the rule, the rest from what :func:`api.documented.documented`
attached to its view.  Component schemas are the JSON schemas pydantic
generates for the models those operations name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from flask import Flask
from pydantic import BaseModel
from werkzeug.routing import Rule

from api.bodies import limit_for
from api.documented import ATTRIBUTE, Operation, Reply
from api.schemas.common import MAX_PATH_ID_CHARS, PATH_ID_PATTERN, ErrorResponse

# Routes that are not the API: the web page and its files, and Flask's own static route.
UNDOCUMENTED_BLUEPRINTS = frozenset({"web"})
UNDOCUMENTED_ENDPOINTS = frozenset({"static"})
_VARIABLE = re.compile(r"<(?:(?P<converter>\w+)(?:\([^)]*\))?:)?(?P<name>\w+)>")
_METHODS = ("get", "post", "put", "patch", "delete")

_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before retrying (a dependency is down)",
        "schema": {"type": "integer", "minimum": 1},
    }
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(model)}}


def _reply(reply: Reply) -> dict[str, Any]:
    described: dict[str, Any] = {"description": reply.description}
    content = {**(_json(reply.model) if reply.model else {}), **reply.also}
    if content:
        described["content"] = content
    return described


def _errors(statuses: tuple[int, ...]) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(s): {"description": "error", "content": _json(ErrorResponse)} for s in statuses
    }
    for status in ("429", "503"):
        if status in responses:
            responses[status]["headers"] = _RETRY_AFTER
    return responses


def _path_parameter(converter: str | None, name: str) -> dict[str, Any]:
    if converter == "int":
        schema: dict[str, Any] = {"type": "integer", "minimum": 0}
    else:
        schema = {"type": "string", "maxLength": MAX_PATH_ID_CHARS, "pattern": PATH_ID_PATTERN}
    return {"name": name, "in": "path", "required": True, "schema": schema}


def openapi_path(rule: Rule) -> tuple[str, list[dict[str, Any]]]:
    """The rule's path in OpenAPI's spelling, and its path parameters in order."""
    parameters = [
        _path_parameter(found.group("converter"), found.group("name"))
        for found in _VARIABLE.finditer(rule.rule)
    ]
    return _VARIABLE.sub(lambda found: "{" + found.group("name") + "}", rule.rule), parameters


def _operation(
    operation: Operation, path_parameters: list[dict[str, Any]], app: Flask, endpoint: str
) -> dict[str, Any]:
    responses = {str(r.status): _reply(r) for r in operation.replies}
    described: dict[str, Any] = {
        "summary": operation.summary,
        "responses": {
            **responses,
            # Every request with a key counts against its rate limits.
            **_errors(operation.errors + ((429,) if operation.secured else ())),
        },
    }
    if operation.body is not None:
        content = {**_json(operation.body), **operation.body_also}
        # A client can size its body by this before sending it (api.bodies).
        sized = {
            kind: {**media, "x-max-bytes": limit_for(app, endpoint, kind).size}
            for kind, media in content.items()
        }
        described["requestBody"] = {"required": True, "content": sized}
    if operation.secured:
        described["security"] = [{"apiKey": []}]
    parameters = [*path_parameters, *operation.query]
    if parameters:
        described["parameters"] = parameters
    return described


def documented_routes(app: Flask) -> Iterator[tuple[Rule, str, Operation | None]]:
    """Every API route and method, with its documentation (None: left unmarked)."""
    for rule in app.url_map.iter_rules():
        blueprint = rule.endpoint.rpartition(".")[0]
        if rule.endpoint in UNDOCUMENTED_ENDPOINTS or blueprint in UNDOCUMENTED_BLUEPRINTS:
            continue
        view = app.view_functions[rule.endpoint]
        for method in sorted(m.lower() for m in rule.methods or ()):
            if method in _METHODS:
                yield rule, method, getattr(view, ATTRIBUTE, None)


def _components(models: set[type[BaseModel]]) -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    for model in sorted(models, key=lambda m: m.__name__):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        definitions.update(schema.pop("$defs", {}))
        definitions[model.__name__] = schema
    return definitions


def openapi_document(app: Flask, server_url: str = "") -> dict[str, Any]:
    """The whole API as OpenAPI 3.1, from ``app``'s routes."""
    paths: dict[str, dict[str, Any]] = {}
    models: set[type[BaseModel]] = {ErrorResponse}
    for rule, method, operation in documented_routes(app):
        if operation is None:
            continue  # tests/integration/test_openapi_routes.py fails for any such route
        path, parameters = openapi_path(rule)
        paths.setdefault(path, {})[method] = _operation(operation, parameters, app, rule.endpoint)
        models.update(operation.models)
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "ragsage",
            "version": "1",
            "description": "Cited answers over your documents.",
        },
        "paths": paths,
        "components": {
            "schemas": _components(models),
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document
