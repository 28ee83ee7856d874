"""The error contract, on both runtimes (see conftest.py): every refusal is the JSON `{error, message, details}`
with the right status, never a 500 or Powertools' own `{"statusCode": ...}` shape (issue 16, defects 6, 8, 9).

- bodies that are not UTF-8 JSON (invalid bytes, UTF-16, another charset, absurd nesting) → 400 saying what
  to send; a dreaming day outside the sweepable range → 422;
- unknown paths → 404, a known path with another method → 405 with `Allow`, a body that is not JSON → 415,
  all in the ErrorBody shape; media types compare case-insensitively;
- namespaces with control characters are refused everywhere; `/projects/*` grants the namespaces below
  `/projects`, not `/projects` itself;
- an empty PATCH is refused, a PATCH that changes nothing keeps the version;
- sessions need the write scope and a tenant has at most `max_open_sessions` open sessions;
- the OpenAPI limit of `base_system` is the service's; `GET /` points to the documentation.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pytest

from agent_memory.domain.sessions.config import MAX_BASE_SYSTEM_CHARS, SessionConfig

from .conftest import Api, LambdaContext, raw_lambda_event, serve_api

MAX_OPEN_SESSIONS = 3
MAX_OPEN_SESSIONS_PER_KEY = 2


@pytest.fixture(scope="module", params=["local", "aws"])
def api(request, tmp_path_factory) -> Iterator[Api]:
    """Both runtimes with a small session cap, so the cap is reached in a few calls."""
    yield from serve_api(
        request.param,
        tmp_path_factory,
        sessions=SessionConfig(
            max_open_sessions=MAX_OPEN_SESSIONS, max_open_sessions_per_key=MAX_OPEN_SESSIONS_PER_KEY
        ),
    )


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def send(
    api: Api,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
    who: str | None = "alpha",
) -> Answer:
    """One request with raw body bytes and exact headers. In Lambda, a body that is not UTF-8 text arrives
    base64-encoded (API Gateway's binary pass-through), as it would from API Gateway."""
    headers = {"Content-Type": "application/json", **(headers or {})}
    if api.runtime == "local":
        with api.client(who) as client:
            response = client.request(method, path, content=body, headers=headers, params=params)
        return Answer(
            response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.text
        )
    from agent_memory.handlers.api import handler

    event = raw_lambda_event(who, method, path, body, headers, params)
    result = handler(event, LambdaContext())
    flat = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    for key, values in (result.get("multiValueHeaders") or {}).items():
        flat[key.lower()] = ", ".join(values)
    return Answer(result["statusCode"], flat, result.get("body") or "")


def error_body(answer: Answer, status: int, code: str | None = None) -> dict[str, Any]:
    assert answer.status == status, answer.text
    assert answer.header(
        "content-type",
    ).startswith("application/json")  # type: ignore[union-attr]
    body = answer.json()
    assert set(body) == {"error", "message", "details"}, body
    assert isinstance(body["message"], str) and body["message"]
    if code is not None:
        assert body["error"] == code, body
    return body


def memory_json(namespace: str = "/projects/billing", content: str = "The export runs at 02:00") -> bytes:
    return json.dumps({"content": content, "namespace": namespace}).encode()


# --------------------------------------------------------------------------- 6: bodies that are not UTF-8 JSON


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        pytest.param(b'{"content": "caf\xe9", "namespace": "/projects/x"}', None, id="invalid-utf8"),
        pytest.param(
            '{"content": "café", "namespace": "/projects/x"}'.encode("utf-16"), None, id="utf16-with-bom"
        ),
        pytest.param(
            '{"content": "café", "namespace": "/projects/x"}'.encode("utf-16-le"), None, id="utf16-le"
        ),
        pytest.param(
            '{"content": "café", "namespace": "/projects/x"}'.encode("latin-1"),
            "application/json; charset=latin-1",
            id="latin1-bytes",
        ),
        pytest.param(memory_json(), "application/json; charset=latin-1", id="latin1-declared"),
        pytest.param(memory_json(), "application/json; charset=utf-16", id="utf16-declared"),
    ],
)
def test_a_body_that_is_not_utf8_json_is_400_saying_to_send_utf8(api, body, content_type):
    headers = {"Content-Type": content_type} if content_type else None
    answer = send(api, "POST", "/v1/memories", body=body, headers=headers)
    refused = error_body(answer, 400)
    assert refused["error"] in {"malformed_json", "unsupported_charset"}
    assert "UTF-8" in refused["message"], refused


def test_json_nested_100000_deep_is_400_not_a_recursion_error(api):
    answer = send(api, "POST", "/v1/memories", body=b"[" * 100_000 + b"]" * 100_000)
    assert "nested" in error_body(answer, 400, "malformed_json")["message"]


def test_an_integer_too_long_to_parse_is_400_and_stores_nothing(api):
    body = b'{"namespace": "/projects/long-int", "content": "x", "metadata": {"n": ' + b"9" * 5000 + b"}}"
    answer = send(api, "POST", "/v1/memories", body=body)
    assert "cannot be parsed" in error_body(answer, 400, "malformed_json")["message"]
    listed = send(api, "GET", "/v1/memories", params={"namespace": "/projects/long-int"})
    assert listed.status == 200 and listed.json()["items"] == []


def test_a_utf8_charset_in_any_case_is_accepted(api):
    ns = f"/projects/c-{uuid.uuid4().hex[:8]}"
    for content_type in ("application/json; charset=utf-8", 'application/json;charset="UTF-8"'):
        answer = send(
            api, "POST", "/v1/memories", body=memory_json(ns), headers={"Content-Type": content_type}
        )
        assert answer.status in (200, 201), answer.text


@pytest.mark.parametrize("day", ["0001-01-01", "1970-01-01", "9999-12-31"])
def test_a_dream_day_outside_the_sweepable_range_is_422(api, day):
    body = json.dumps({"namespace": "/projects/billing", "day": day, "dry_run": True}).encode()
    refused = error_body(send(api, "POST", "/v1/admin/dream", body=body), 422)
    assert day in refused["message"]


def test_a_dream_day_within_the_range_is_swept(api):
    day = (date.today() - timedelta(days=30)).isoformat()
    body = json.dumps({"namespace": "/projects/billing", "day": day, "dry_run": True}).encode()
    answer = send(api, "POST", "/v1/admin/dream", body=body)
    assert answer.status == 200, answer.text
    assert answer.json()["runs"][0]["day"] == day


# --------------------------------------------------------------------------- 9: one error shape


def test_an_unknown_path_is_404_in_the_error_shape(api):
    for path in ("/v1/nothing-here", "/v1/memories/x/y/z", "/nope"):
        error_body(send(api, "GET", path), 404, "not_found")


def test_a_known_path_with_another_method_is_405_with_allow(api):
    answer = send(api, "DELETE", "/v1/memories")
    refused = error_body(answer, 405, "method_not_allowed")
    allowed = {m.strip() for m in (answer.header("allow") or "").split(",")}
    assert allowed == {"GET", "POST"}, answer.headers
    assert refused["details"]["allowed"] == ["GET", "POST"]
    answer = send(api, "PUT", "/v1/memories/mem_0123")
    error_body(answer, 405, "method_not_allowed")
    assert {m.strip() for m in (answer.header("allow") or "").split(",")} == {"GET", "PATCH"}


def test_an_unknown_path_or_method_needs_a_key_first(api):
    assert send(api, "DELETE", "/v1/memories", who=None).status == 401
    assert send(api, "GET", "/v1/nothing-here", who=None).status == 401


def test_a_non_json_media_type_is_415_in_the_error_shape(api):
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/xml"):
        answer = send(api, "POST", "/v1/memories", body=b"content=x", headers={"Content-Type": content_type})
        assert "application/json" in error_body(answer, 415, "unsupported_media_type")["message"]


def test_media_types_are_case_insensitive(api):
    ns = f"/projects/m-{uuid.uuid4().hex[:8]}"
    for content_type in ("Application/JSON", "APPLICATION/JSON; Charset=UTF-8"):
        answer = send(
            api, "POST", "/v1/memories", body=memory_json(ns), headers={"Content-Type": content_type}
        )
        assert answer.status in (200, 201), (content_type, answer.text)


@pytest.mark.parametrize(
    "path", ["/v1/memories", "/v1/changes", "/v1/conflicts", "/v1/files/memory", "/v1/stats"]
)
@pytest.mark.parametrize("bad", ["/projects/x\n", "/projects/x\r\n", "/projects/x\t", "/projects/\x00x"])
def test_a_namespace_with_control_characters_is_refused(api, path, bad):
    answer = send(api, "GET", path, params={"namespace": bad})
    assert answer.status == 422, answer.text
    error_body(answer, 422)


def test_a_namespace_with_control_characters_is_refused_in_bodies(api):
    answer = send(api, "POST", "/v1/memories", body=memory_json("/projects/x\n"))
    error_body(answer, 422)


def test_a_subtree_pattern_does_not_grant_its_parent(api):
    """`/projects/*` means the namespaces below /projects, as a glob does: not /projects itself (listing the
    /projects tree shows only what lies below it)."""
    ns = f"/projects/p-{uuid.uuid4().hex[:8]}"
    assert send(api, "POST", "/v1/memories", body=memory_json(ns), who="alpha-projects-rw").status == 201
    parent = send(api, "POST", "/v1/memories", body=memory_json("/projects"), who="alpha-projects-rw")
    assert error_body(parent, 403, "forbidden")["details"]["namespace"] == "/projects"
    alone = {"namespace": "/projects", "include_children": "false"}
    error_body(send(api, "GET", "/v1/memories", params=alone, who="alpha-projects-rw"), 403, "forbidden")
    # The tree listing (the default) is bounded by the key's patterns: the children, never /projects itself
    tree = send(api, "GET", "/v1/memories", params={"namespace": "/projects"}, who="alpha-projects-rw")
    assert tree.status == 200, tree.text
    namespaces = {item["namespace"] for item in tree.json()["items"]}
    assert ns in namespaces
    assert all(name.startswith("/projects/") for name in namespaces), namespaces


def test_an_empty_patch_is_422_and_a_no_op_patch_keeps_the_version(api):
    ns = f"/projects/u-{uuid.uuid4().hex[:8]}"
    created = send(api, "POST", "/v1/memories", body=memory_json(ns, "Deploys go out on Tuesdays")).json()
    memory = created["memory"]
    path = f"/v1/memories/{memory['id']}"

    empty = send(api, "PATCH", path, body=b"{}")
    assert "nothing to change" in error_body(empty, 422)["message"]
    only_version = send(api, "PATCH", path, body=json.dumps({"expected_version": memory["version"]}).encode())
    error_body(only_version, 422)

    same = send(
        api, "PATCH", path, body=json.dumps({"score": memory["score"], "type": memory["type"]}).encode()
    )
    assert same.status == 200, same.text
    assert same.json()["version"] == memory["version"]
    assert same.json()["updated_at"] == memory["updated_at"]

    changed = send(api, "PATCH", path, body=json.dumps({"score": 0.42}).encode())
    assert changed.status == 200 and changed.json()["version"] == memory["version"] + 1
    history = send(api, "GET", f"{path}/history").json()
    assert [c["operation"] for c in history["changes"]] == ["create", "update"]


def test_the_openapi_limit_of_base_system_is_the_services(api):
    spec = send(api, "GET", "/swagger", params={"format": "json"}, who=None).json()
    field = spec["components"]["schemas"]["SessionStartRequest"]["properties"]["base_system"]
    limits = [
        option.get("maxLength") for option in field.get("anyOf", [field]) if option.get("type") == "string"
    ]
    assert limits == [MAX_BASE_SYSTEM_CHARS]
    over = json.dumps({"namespace": "/projects/billing", "base_system": "x" * (MAX_BASE_SYSTEM_CHARS + 1)})
    error_body(send(api, "POST", "/v1/sessions", body=over.encode()), 422)


def test_the_root_points_to_the_documentation_without_a_key(api):
    answer = send(api, "GET", "/", who=None)
    assert answer.status == 200, answer.text
    links = answer.json()["links"]
    assert links["documentation"].endswith("/swagger") and links["health"].endswith("/v1/health")


# --------------------------------------------------------------------------- 8: sessions


def test_sessions_need_the_write_scope(api):
    ns = "/projects/billing"
    started = send(api, "POST", "/v1/sessions", body=json.dumps({"namespace": ns}).encode())
    assert started.status == 201, started.text
    session_id = started.json()["session"]["id"]
    try:
        refused = send(
            api, "POST", "/v1/sessions", body=json.dumps({"namespace": ns}).encode(), who="alpha-billing-ro"
        )
        assert error_body(refused, 403, "forbidden")["details"]["required"] == "write"
        for path, body in (
            (f"/v1/sessions/{session_id}/end", b"{}"),
            (f"/v1/sessions/{session_id}/turns", b'{"message": "hi"}'),
        ):
            error_body(send(api, "POST", path, body=body, who="alpha-billing-ro"), 403, "forbidden")
        # reading stays a read
        read = send(api, "GET", f"/v1/sessions/{session_id}", who="alpha-billing-ro")
        assert read.status == 200 and read.json()["session"]["status"] == "open"
    finally:
        assert send(api, "POST", f"/v1/sessions/{session_id}/end", body=b"{}").status == 200


def test_a_key_has_at_most_max_open_sessions_per_key_and_cannot_use_up_the_tenants_cap(api):
    """A key limited to /projects/* fills its own cap, not the tenant's: the tenant's admin key still starts."""
    start = json.dumps({"namespace": "/projects/alpha"}).encode()
    opened: list[tuple[str, str]] = []
    try:
        for _ in range(MAX_OPEN_SESSIONS_PER_KEY):
            answer = send(api, "POST", "/v1/sessions", body=start, who="alpha-projects-rw")
            assert answer.status == 201, answer.text
            opened.append(("alpha-projects-rw", answer.json()["session"]["id"]))
        refused = error_body(
            send(api, "POST", "/v1/sessions", body=start, who="alpha-projects-rw"), 409, "too_many_sessions"
        )
        assert refused["details"]["limit"] == MAX_OPEN_SESSIONS_PER_KEY
        assert refused["details"]["per"] == "api_key"
        other = send(api, "POST", "/v1/sessions", body=json.dumps({"namespace": "/other/hr"}).encode())
        assert other.status == 201, other.text
        opened.append(("alpha", other.json()["session"]["id"]))
    finally:
        for who, session_id in opened:
            send(api, "POST", f"/v1/sessions/{session_id}/end", body=b"{}", who=who)


def test_a_tenant_has_at_most_max_open_sessions(api):
    start = json.dumps({"namespace": "/projects/billing"}).encode()
    opened = []
    # two keys of the tenant (each under its own cap) fill the tenant's cap together
    whos = ["alpha", "alpha", "alpha-projects-rw"]
    for who in whos[:MAX_OPEN_SESSIONS]:
        answer = send(api, "POST", "/v1/sessions", body=start, who=who)
        assert answer.status == 201, answer.text
        opened.append(answer.json()["session"]["id"])
    try:
        # a third key, under its own cap, meets the tenant's
        third = "alpha-purger"
        refused = error_body(
            send(api, "POST", "/v1/sessions", body=start, who=third), 409, "too_many_sessions"
        )
        assert refused["details"]["limit"] == MAX_OPEN_SESSIONS
        assert refused["details"]["per"] == "tenant"
        assert "/end" in refused["message"]
        # another tenant has its own cap
        assert send(api, "POST", "/v1/sessions", body=start, who="beta").status == 201
        # ending one makes room for one
        assert send(api, "POST", f"/v1/sessions/{opened.pop()}/end", body=b"{}").status == 200
        again = send(api, "POST", "/v1/sessions", body=start, who=third)
        assert again.status == 201, again.text
        opened.append(again.json()["session"]["id"])
        error_body(send(api, "POST", "/v1/sessions", body=start, who=third), 409, "too_many_sessions")
    finally:
        for session_id in opened:
            send(api, "POST", f"/v1/sessions/{session_id}/end", body=b"{}")


def test_a_post_without_a_body_of_its_own_answers_body_refusals_the_document_declares(api):
    """POST /v1/memories/{id}/reviewed takes no body, but the server reads one before routing: a body that is
    not UTF-8, not JSON or oversized is refused, each with a status docs/openapi.json declares for it."""
    from pathlib import Path

    document = json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text())
    declared = document["paths"]["/v1/memories/{memory_id}/reviewed"]["post"]["responses"]
    path = "/v1/memories/mem_doesnotexist/reviewed"

    malformed = error_body(send(api, "POST", path, body=b"\xff\xfe not UTF-8"), 400)
    assert malformed["error"] == "malformed_json"
    other_type = send(api, "POST", path, body=b"x=1", headers={"Content-Type": "text/plain"})
    assert other_type.status == 415, other_type.text
    assert {"400", "413", "415"} <= set(declared)
