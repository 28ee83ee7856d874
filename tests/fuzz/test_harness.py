"""The fuzz harness finds what it is there to find: a server error, a body off the schema, an undocumented
status, a refused request that changed state; and each failure carries its reproduction."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from schemathesis.core.failures import FailureGroup
from schemathesis.core.transport import Response

from tests.fuzz.harness import Target, load_schema, run_case

pytestmark = pytest.mark.fuzz

SCHEMA = load_schema(coverage=False)
NS = "/projects/harness"


def remember_case() -> Any:
    operation = SCHEMA["/v1/memories"]["POST"]
    return operation.Case(body={"content": "x", "namespace": NS}, media_type="application/json")


def fake_target(status: int, body: Any, changes_after: list[Any] | None = None) -> Target:
    """Answers `status`/`body` to the case; the change log of NS is empty until the case was sent, then
    `changes_after`."""
    sent: list[bool] = []

    def send(case: Any) -> tuple[Response, str]:
        sent.append(True)
        request = requests.Request("POST", "http://test/v1/memories", json=case.body).prepare()
        response = Response(
            status_code=status,
            headers={"content-type": ["application/json"]},
            content=json.dumps(body).encode(),
            request=request,
            elapsed=0.001,
            verify=True,
        )
        return response, "REPRODUCTION"

    def request(method: str, path: str, params: dict[str, str] | None, payload: Any) -> tuple[int, Any]:
        if path == "/v1/stats":
            return 200, {"namespace": NS}
        return 200, {"items": (changes_after or []) if sent else [], "next_cursor": None}

    return Target(runtime="test", send=send, request=request)


REFUSED = {"error": "invalid_request", "message": "no", "details": {}}


def test_a_refusal_that_changes_nothing_passes() -> None:
    run_case(fake_target(422, REFUSED), remember_case())


def test_a_server_error_fails_with_the_reproduction() -> None:
    with pytest.raises(FailureGroup) as failure:
        run_case(
            fake_target(500, {"error": "internal_error", "message": "boom", "details": {}}), remember_case()
        )
    assert "Server error" in str(failure.value)
    assert "REPRODUCTION" in "".join(failure.value.__notes__)


def test_an_error_body_off_the_schema_fails() -> None:
    with pytest.raises(FailureGroup, match="schema"):
        run_case(fake_target(409, {"statusCode": 409, "message": "Conflict"}), remember_case())


def test_an_undocumented_status_fails() -> None:
    with pytest.raises(FailureGroup, match="Undocumented status code"):
        run_case(fake_target(418, REFUSED), remember_case())


def test_a_refused_request_that_stored_something_fails() -> None:
    with pytest.raises(AssertionError, match="changed state") as failure:
        run_case(fake_target(422, REFUSED, changes_after=[{"operation": "create"}]), remember_case())
    assert "REPRODUCTION" in "".join(failure.value.__notes__)
