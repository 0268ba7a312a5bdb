"""/openapi.json is generated from the routes: every route is in it, nothing else is,
and it still says everything the hand-written document of before issue 26 said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from api.openapi import documented_routes, openapi_path

from .api_harness import ApiServer

BEFORE = Path(__file__).parents[1] / "fixtures/openapi/before_issue_26.json"
# Changed on purpose since: the dense weight, once 0.3 by default, is now the
# engine's choice when unset (issue 57), so its schema became "a number in
# [0, 1] or null".  Every value a client could send before is still accepted.
CHANGED_ON_PURPOSE = (
    "/schemas/RetrievalOptionsBody/properties/hybrid_alpha",
    "/schemas/SearchRequest/properties/hybrid_alpha",
)


def _missing(old: Any, new: Any, where: str = "") -> list[str]:
    """What ``old`` says that ``new`` does not: keys, list items or values."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [where]
        return [
            gap
            for key, value in old.items()
            for gap in (
                [f"{where}/{key}"]
                if key not in new
                else _missing(value, new[key], f"{where}/{key}")
            )
        ]
    if isinstance(old, list):
        if not isinstance(new, list):
            return [where]
        return [
            f"{where}[{i}]" for i, item in enumerate(old) if all(_missing(item, x) for x in new)
        ]
    return [] if old == new else [f"{where}: {old!r} is now {new!r}"]


def test_every_route_is_documented_and_every_documented_path_is_a_route(api: ApiServer) -> None:
    routes = list(documented_routes(api.app))
    assert [(r.rule, method) for r, method, operation in routes if operation is None] == []
    served = {(openapi_path(rule)[0], method) for rule, method, _ in routes}
    document = api.client().get("/openapi.json").json()
    published = {(path, method) for path, item in document["paths"].items() for method in item}
    assert published == served
    assert len(served) >= 21


def test_the_document_says_all_the_hand_written_one_did(api: ApiServer) -> None:
    before = json.loads(BEFORE.read_text())
    now = api.client().get("/openapi.json").json()
    assert _missing(before["paths"], now["paths"]) == []
    gaps = _missing(before["components"], now["components"])
    assert [gap for gap in gaps if not gap.startswith(CHANGED_ON_PURPOSE)] == []
    for where in CHANGED_ON_PURPOSE:
        _, _, schema, _, field = where.split("/")
        old = before["components"]["schemas"][schema]["properties"][field]
        new = Draft202012Validator(now["components"]["schemas"][schema]["properties"][field])
        assert new.is_valid(old["default"]) and new.is_valid(old["minimum"])
        assert new.is_valid(old["maximum"]) and new.is_valid(None)
        assert not new.is_valid(old["maximum"] + 0.1)


def test_the_comparison_notices_a_path_or_a_field_gone() -> None:
    before = json.loads(BEFORE.read_text())
    fewer = json.loads(BEFORE.read_text())
    del fewer["paths"]["/v1/sources"]
    fewer["components"]["schemas"]["SearchRequest"]["properties"].pop("top_k")
    assert sorted(_missing(before, fewer)) == [
        "/components/schemas/SearchRequest/properties/top_k",
        "/paths//v1/sources",
    ]


def test_every_schema_in_the_document_is_valid_json_schema(api: ApiServer) -> None:
    document = api.client().get("/openapi.json").json()
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    refs = {
        ref.rsplit("/", 1)[1]
        for ref in json.dumps(document).split('"$ref": "')[1:]
        for ref in [ref.split('"', 1)[0]]
    }
    assert refs <= set(document["components"]["schemas"])


def test_a_route_left_unmarked_is_found() -> None:
    from flask import Flask

    from api.documented import documented, ok
    from api.schemas.ops import Health

    app = Flask("probe")

    @app.get("/v1/marked/<int:n>")
    @documented("Marked", ok(Health))
    def marked(n: int) -> str:
        return ""

    @app.get("/v1/forgotten")
    def forgotten() -> str:
        return ""

    found = {(rule.rule, operation is None) for rule, _, operation in documented_routes(app)}
    assert found == {("/v1/marked/<int:n>", False), ("/v1/forgotten", True)}
    (rule,) = [r for r, _, op in documented_routes(app) if op is not None]
    assert openapi_path(rule) == (
        "/v1/marked/{n}",
        [
            {
                "name": "n",
                "in": "path",
                "required": True,
                "schema": {"type": "integer", "minimum": 0},
            }
        ],
    )
