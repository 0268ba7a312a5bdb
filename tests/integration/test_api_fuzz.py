"""Schema-driven fuzzing: schemathesis generates requests from /openapi.json.

Every response to a generated request must be a non-5xx reply the published
schema allows: a documented status code, content type and body shape.  The
requests travel over real HTTP to the served app.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings

from .api_harness import ApiServer, make_key
from .worker_harness import Deployment


def test_no_generated_request_gets_a_5xx_or_an_undocumented_reply(
    api: ApiServer, deployment: Deployment
) -> None:
    schema = schemathesis.openapi.from_url(f"{api.url}/openapi.json")
    headers = {"Authorization": f"Bearer {make_key(deployment.settings, 'fuzz')}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 14

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def exercise(case: Any) -> None:
            response = case.call(headers=headers)
            case.validate_response(response)

        exercise()
