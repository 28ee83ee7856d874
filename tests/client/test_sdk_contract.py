"""The SDK against the API's contract, without a server: every route of docs/openapi.json has a client method
that sends exactly that request; retries, idempotency keys and typed errors (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_memory_client import ROUTES, AsyncClient, Client, RetryPolicy, errors
from agent_memory_client._http import parse_retry_after

OPENAPI = json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text())
METHODS = ("get", "post", "put", "patch", "delete")


def documented_routes() -> dict[str, dict[str, Any]]:
    return {
        f"{method.upper()} {path}": operation
        for path, item in OPENAPI["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def test_every_documented_route_has_a_client_method() -> None:
    missing = sorted(set(documented_routes()) - set(ROUTES))
    assert not missing, (
        f"routes in docs/openapi.json the client does not cover (add them to ROUTES): {missing}"
    )
    stale = sorted(set(ROUTES) - set(documented_routes()))
    assert not stale, f"ROUTES names routes the API does not document: {stale}"
    for name in ROUTES.values():
        assert callable(getattr(Client, name, None)) and callable(getattr(AsyncClient, name, None)), name


def _dummy(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return args[0]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return _dummy(next(a for a in args if a is not type(None)))
    if annotation is str:
        return "x1"
    if annotation is bytes:
        return b"PK\x03\x04"
    if annotation is bool:
        return True
    if annotation is int:
        return 1
    if annotation is float:
        return 0.5
    if origin is not None and getattr(origin, "__name__", "") in ("Mapping", "dict"):
        return {"manifest": {}, "members": {}}
    if origin is not None and getattr(origin, "__name__", "") in ("Sequence", "list"):
        inner = args[0] if args else str
        if typing.get_origin(inner) is not None and getattr(typing.get_origin(inner), "__name__", "") in (
            "Mapping",
            "dict",
        ):
            return [{"content": "c", "namespace": "/p"}]
        return [_dummy(inner)]
    raise AssertionError(f"no dummy for {annotation!r}")


def _required_args(method: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(method)
    return {
        name: _dummy(hints[name])
        for name, param in inspect.signature(method).parameters.items()
        if name != "self" and param.default is inspect.Parameter.empty
    }


def _template_regex(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_method_sends_its_documented_request(route: str) -> None:
    """The method mapped to a route sends that method and path, the required query parameters, and a JSON
    body with the required fields of the route's request schema; writes carry an Idempotency-Key."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    verb = route.split(" ", 1)[0]
    operation = documented_routes()[route]
    with Client("http://api.test", "k", transport=httpx.MockTransport(answer)) as client:
        method = getattr(client, ROUTES[route])
        method(**_required_args(method))
    (request,) = seen
    assert request.method == verb
    candidates = [
        r
        for r in documented_routes()
        if r.startswith(verb + " ") and _template_regex(r[len(verb) + 1 :]).match(request.url.path)
    ]
    # a literal segment wins over a template (GET /v1/memories/reused is not GET /v1/memories/{memory_id})
    fewest = min(r.count("{") for r in candidates)
    assert [r for r in candidates if r.count("{") == fewest] == [route]
    for param in operation.get("parameters", []):
        if param["in"] == "query" and param.get("required"):
            assert param["name"] in request.url.params, param["name"]
    schema_ref = (
        operation.get("requestBody", {})
        .get("content", {})
        .get("application/json", {})
        .get("schema", {})
        .get("$ref")
    )
    if schema_ref:
        schema = OPENAPI["components"]["schemas"][schema_ref.rsplit("/", 1)[1]]
        body = json.loads(request.content)
        assert set(schema.get("required", [])) <= set(body), (route, body)
        assert set(body) <= set(schema["properties"]), (route, body)
    assert request.headers["Authorization"] == "Bearer k"
    assert ("Idempotency-Key" in request.headers) == (verb != "GET")


def test_recall_sends_the_rerank_option_the_api_documents_and_leaves_it_out_by_default() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"query_hash": "h", "results": [], "rerank": None})

    with Client("http://api.test", "k", transport=httpx.MockTransport(answer)) as client:
        client.recall("how do we deploy", ["/p"], k=5, rerank="bedrock")
        client.recall("how do we deploy", ["/p"])
    reranked, plain = (json.loads(request.content) for request in seen)
    assert reranked["rerank"] == "bedrock" and "rerank" not in plain
    schema = OPENAPI["components"]["schemas"]["RecallRequest"]["properties"]["rerank"]
    choices = [
        branch.get("enum") or [branch["const"]] for branch in schema["anyOf"] if branch.get("type") != "null"
    ]
    assert choices == [["bedrock"]]


# ------------------------------------------------------------------------------------------------- retries


class Script:
    """Answers in order; records each request."""

    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answers.pop(0)


def _error(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": code, "message": f"{code} happened"}, headers=headers)


REMEMBERED = {"decision": "added", "reason": "new", "memory": {"id": "m1"}}


def test_retries_429_and_503_honouring_retry_after_with_the_same_idempotency_key() -> None:
    script = Script(
        _error(429, "THROTTLED", {"Retry-After": "3"}),
        _error(503, "overloaded", {"Retry-After": "1"}),
        httpx.Response(201, json=REMEMBERED),
    )
    slept: list[float] = []
    with Client("http://api.test", "k", transport=httpx.MockTransport(script), sleep=slept.append) as client:
        result = client.remember("I prefer tabs", "/p")
    assert result == REMEMBERED
    assert slept == [3.0, 1.0]
    keys = {r.headers["Idempotency-Key"] for r in script.requests}
    assert len(script.requests) == 3 and len(keys) == 1


def test_backoff_without_retry_after_is_exponential_with_full_jitter() -> None:
    policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=3.0)
    assert [policy.delay(n, None, rand=lambda: 1.0) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay(2, None, rand=lambda: 0.25) == 0.5
    script = Script(*[_error(503, "upstream_unavailable")] * 3, httpx.Response(200, json={"status": "ok"}))
    slept: list[float] = []
    with Client("http://api.test", transport=httpx.MockTransport(script), sleep=slept.append) as client:
        assert client.health() == {"status": "ok"}
    assert len(slept) == 3
    assert all(0 <= s <= 0.25 * 2**n for n, s in enumerate(slept))


def test_retries_stop_after_max_and_raise_the_typed_error() -> None:
    script = Script(*[_error(429, "THROTTLED")] * 3)
    slept: list[float] = []
    client = Client(
        "http://api.test",
        transport=httpx.MockTransport(script),
        retry=RetryPolicy(max_retries=2),
        sleep=slept.append,
    )
    with pytest.raises(errors.RateLimited) as caught:
        client.recall("q", ["/p"])
    assert caught.value.status == 429 and caught.value.code == "THROTTLED"
    assert len(script.requests) == 3 and len(slept) == 2


def test_other_errors_are_not_retried() -> None:
    script = Script(_error(500, "internal_error"))
    slept: list[float] = []
    client = Client("http://api.test", transport=httpx.MockTransport(script), sleep=slept.append)
    with pytest.raises(errors.ServerError):
        client.stats("/p")
    assert len(script.requests) == 1 and slept == []


def test_async_client_retries_too() -> None:
    script = Script(_error(503, "overloaded", {"Retry-After": "2"}), httpx.Response(201, json=REMEMBERED))
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    async def run() -> dict[str, Any]:
        async with AsyncClient(
            "http://api.test", "k", transport=httpx.MockTransport(script), sleep=record
        ) as client:
            return await client.remember("x", "/p", idempotency_key="fixed-key")

    assert asyncio.run(run()) == REMEMBERED
    assert slept == [2.0]
    assert [r.headers["Idempotency-Key"] for r in script.requests] == ["fixed-key", "fixed-key"]


def test_retry_after_as_http_date() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: retry now
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("soon") is None


# ---------------------------------------------------------------------------------------------- typed errors


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "invalid_request", errors.BadRequest),
        (401, "unauthenticated", errors.Unauthenticated),
        (403, "forbidden", errors.Forbidden),
        (404, "not_found", errors.NotFound),
        (408, "request_timeout", errors.RequestTimeout),
        (409, "conflict", errors.Conflict),
        (409, "concurrent_modification", errors.ConcurrentModification),
        (409, "cap_exceeded", errors.CapExceeded),
        (409, "duplicate_entry", errors.DuplicateEntry),
        (409, "ambiguous_match", errors.AmbiguousMatch),
        (409, "session_closed", errors.SessionClosed),
        (409, "too_many_sessions", errors.TooManySessions),
        (413, "too_large", errors.PayloadTooLarge),
        (415, "unsupported_media_type", errors.UnsupportedMediaType),
        (422, "validation_failed", errors.ValidationFailed),
        (422, "unsafe_content", errors.UnsafeContent),
        (500, "internal_error", errors.ServerError),
        (502, "upstream_failed", errors.UpstreamFailed),
        (503, "overloaded", errors.Overloaded),
        (503, "upstream_unavailable", errors.UpstreamUnavailable),
        (504, "INTEGRATION_TIMEOUT", errors.GatewayTimeout),
        (418, "teapot", errors.ApiError),
        (409, "unsafe_content", errors.Conflict),  # a known code under another status: the status decides
    ],
)
def test_each_error_code_and_status_has_its_class(
    status: int, code: str, expected: type[errors.ApiError]
) -> None:
    script = Script(httpx.Response(status, json={"error": code, "message": "why", "details": {"limit": 3}}))
    client = Client(
        "http://api.test", transport=httpx.MockTransport(script), retry=RetryPolicy(max_retries=0)
    )
    with pytest.raises(errors.ApiError) as caught:
        client.get_memory("m1")
    assert type(caught.value) is expected
    assert (caught.value.status, caught.value.code, caught.value.message) == (status, code, "why")
    assert caught.value.details == {"limit": 3}


def test_a_non_json_refusal_keeps_its_text() -> None:
    script = Script(httpx.Response(503, text="Service Unavailable"))
    client = Client(
        "http://api.test", transport=httpx.MockTransport(script), retry=RetryPolicy(max_retries=0)
    )
    with pytest.raises(errors.Unavailable, match="Service Unavailable"):
        client.health()


def test_an_unreachable_api_is_a_transport_error_after_retries() -> None:
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    client = Client(
        "http://api.test",
        transport=httpx.MockTransport(refuse),
        retry=RetryPolicy(max_retries=2),
        sleep=lambda s: None,
    )
    with pytest.raises(errors.TransportError, match="connection refused"):
        client.health()
    assert len(attempts) == 3


def test_pagination_follows_next_cursor() -> None:
    pages = {
        None: {"items": [{"id": "a"}, {"id": "b"}], "next_cursor": "c1"},
        "c1": {"items": [{"id": "c"}], "next_cursor": "c2"},
        "c2": {"items": [], "next_cursor": None},
    }
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        seen.append(cursor)
        return httpx.Response(200, json=pages[cursor])

    with Client("http://api.test", transport=httpx.MockTransport(answer)) as client:
        assert [m["id"] for m in client.iter_memories("/p", page_size=2)] == ["a", "b", "c"]
    assert seen == [None, "c1", "c2"]

    async def run() -> list[str]:
        async with AsyncClient("http://api.test", transport=httpx.MockTransport(answer)) as client:
            return [c["id"] async for c in client.iter_changes("/p")]

    assert asyncio.run(run()) == ["a", "b", "c"]


def test_the_client_package_depends_on_httpx_alone_and_never_imports_the_server() -> None:
    """Agents install the client without the server: no import of `agent_memory` (the service) or boto3, and
    httpx is its only required dependency (`mcp` is the optional `[mcp]` extra, imported only by the MCP
    server module)."""
    package = Path(__file__).resolve().parents[2] / "clients" / "python"
    offenders = []
    for source in sorted((package / "agent_memory_client").glob("*.py")):
        for number, line in enumerate(source.read_text().splitlines(), 1):
            stripped = line.strip()
            if re.match(r"(from|import)\s+(agent_memory|boto3|botocore)\b(?!_client)", stripped):
                offenders.append(f"{source.name}:{number}: {stripped}")
            if re.match(r"(from|import)\s+mcp(_types)?\b", stripped) and source.name != "mcp_server.py":
                offenders.append(f"{source.name}:{number}: {stripped}")
    assert offenders == []
    project = (package / "pyproject.toml").read_text()
    dependencies = re.search(r"^dependencies = \[(.*)\]$", project, re.M)
    assert dependencies is not None
    assert re.findall(r'"([A-Za-z0-9_.-]+)', dependencies.group(1)) == ["httpx"]
