"""The committed OpenAPI document is the generated one (refresh: `make openapi`), and the security it declares
for each operation is what the API really enforces."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from agent_memory.api.app import create_app
from agent_memory.api.auth import bearer_token
from agent_memory.api.openapi import openapi_document
from agent_memory.domain.identity import Principal, Scope
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.contract.chat_fakes import api_event

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
BEARER = [{"bearer": []}]

# The only operations anyone may call without an API key. Everything else in the document must require the
# bearer scheme, and the running API must refuse it without a key.
PUBLIC_OPERATIONS = {("GET", "/v1/health")}

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    }


def effective_security(document: dict[str, Any], operation: dict[str, Any]) -> list[dict[str, list[str]]]:
    """OpenAPI 3: an operation's own `security` replaces the document's; absent, the document's applies."""
    return operation["security"] if "security" in operation else document.get("security", [])


def is_open(security: list[dict[str, list[str]]]) -> bool:
    """No requirement at all, or an empty requirement object among the alternatives (anonymous allowed)."""
    return not security or {} in security


class Context:
    function_name = "agent-memory-api"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agent-memory-api"
    aws_request_id = "openapi-test"


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_local(Settings(data_dir=tmp_path_factory.mktemp("data"), embedder="hashing")).services


def build_app(services: Any) -> APIGatewayRestResolver:
    """The real routes and middleware over local services; the one accepted key is `good-key`, with every
    scope on every namespace, so a refusal can only come from a missing key."""
    principal = Principal(
        tenant="acme", namespaces=("*",), scopes=frozenset(Scope), key_id="openapi-test-key"
    )

    def authenticate(request: Any) -> Principal:
        if bearer_token(request) != "good-key":
            raise AssertionError("only good-key is sent in these tests")
        return principal

    return create_app(APIGatewayRestResolver(enable_validation=True), lambda: services, authenticate)


def call(app: APIGatewayRestResolver, method: str, template: str, authorization: str | None) -> dict:
    path = re.sub(r"\{[^}]+\}", "x1", template)
    headers = {"Authorization": authorization} if authorization else None
    return app.resolve(api_event(method, path, tenant=None, headers=headers), Context())


def test_committed_openapi_matches_the_routes():
    generated = json.loads(json.dumps(openapi_document(), sort_keys=True))
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert committed == generated, "docs/openapi.json is stale: run `make openapi`"


def test_every_operation_documents_the_bearer_scheme_and_the_api_enforces_it(services):
    document = openapi_document()
    app = build_app(services)
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "API key",
    }
    documented = operations(document)
    assert set(documented) >= PUBLIC_OPERATIONS, "a known public operation vanished from the document"
    protected = sorted(set(documented) - PUBLIC_OPERATIONS)
    assert protected, "the document lists no operation"
    for method, path in protected:
        # The document says a bearer key is required ...
        assert effective_security(document, documented[(method, path)]) == BEARER, (method, path)
        # ... and the API refuses the operation without one ...
        anonymous = call(app, method, path, None)
        assert anonymous["statusCode"] == 401, (method, path, anonymous["body"])
        assert json.loads(anonymous["body"])["error"] == "unauthenticated"
        assert anonymous["multiValueHeaders"]["WWW-Authenticate"] == ['Bearer realm="agent-memory"']
        # ... while with a key the request reaches the route: not refused, and not the router's
        # "no such route" 404 (every answer of the routes and the error handlers has an `error` or is 2xx).
        keyed = call(app, method, path, "Bearer good-key")
        assert keyed["statusCode"] != 401, (method, path, keyed["body"])
        assert keyed["statusCode"] < 300 or "error" in json.loads(keyed["body"]), (method, path, keyed)


def test_public_operations_answer_without_a_key(services):
    app = build_app(services)
    for method, path in sorted(PUBLIC_OPERATIONS):
        response = call(app, method, path, None)
        assert response["statusCode"] == 200, (method, path, response["body"])


def test_public_operations_are_documented_as_open():
    document = openapi_document()
    documented = operations(document)
    for key in sorted(PUBLIC_OPERATIONS):
        assert is_open(effective_security(document, documented[key])), key


def test_swagger_serves_the_same_document_as_the_committed_one(services):
    """/swagger builds the document on request with the same refusals (api/responses.py); only `servers`
    differs: the stage, behind API Gateway."""
    event = api_event("GET", "/swagger", tenant=None)
    event["queryStringParameters"] = {"format": "json"}
    event["multiValueQueryStringParameters"] = {"format": ["json"]}
    response = build_app(services).resolve(event, Context())
    assert response["statusCode"] == 200
    served = json.loads(response["body"])
    generated = openapi_document()
    assert served.pop("servers") == [{"url": "/prod"}]  # the stage of the event
    generated.pop("servers", None)
    assert served == generated
    assert "ErrorBody" in served["components"]["schemas"]
