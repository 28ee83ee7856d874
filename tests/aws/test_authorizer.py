"""The API key authorizer with real API Gateway authorizer events, and the key store on moto DynamoDB."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from agent_memory.adapters.aws.api_keys import DynamoApiKeyStore, hash_api_key
from agent_memory.domain.errors import Misconfigured, UpstreamUnavailable, ValidationFailed
from agent_memory.handlers import authorizer
from agent_memory.handlers._runtime import Lazy
from agent_memory.wiring.aws import ApiKeyLookup
from tests.aws.support import API_KEYS_TABLE, REGION

METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/POST/v1/memories"

# A REST API REQUEST authorizer event, as API Gateway sends it (headers abridged).
REQUEST_EVENT: dict[str, Any] = {
    "type": "REQUEST",
    "methodArn": METHOD_ARN,
    "resource": "/v1/memories",
    "path": "/v1/memories",
    "httpMethod": "POST",
    "headers": {
        "Accept": "application/json",
        "Host": "abcdef123.execute-api.us-east-1.amazonaws.com",
        "User-Agent": "agent/1.0",
        "X-Amzn-Trace-Id": "Root=1-5e66d96f-7491f09xmpl79d18acf3d050",
    },
    "multiValueHeaders": {},
    "queryStringParameters": {},
    "multiValueQueryStringParameters": {},
    "pathParameters": {},
    "stageVariables": {},
    "requestContext": {
        "resourceId": "r2d2c3",
        "resourcePath": "/v1/memories",
        "httpMethod": "POST",
        "extendedRequestId": "ZbTxQF9xIAMFbXw=",
        "requestTime": "30/Nov/2026:12:00:00 +0000",
        "path": "/prod/v1/memories",
        "accountId": "123456789012",
        "protocol": "HTTP/1.1",
        "stage": "prod",
        "domainPrefix": "abcdef123",
        "requestTimeEpoch": 1796040000000,
        "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        "identity": {"sourceIp": "203.0.113.7", "userAgent": "agent/1.0"},
        "domainName": "abcdef123.execute-api.us-east-1.amazonaws.com",
        "apiId": "abcdef123",
    },
}


@dataclass
class LambdaContext:
    function_name: str = "agent-memory-authorizer"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:agent-memory-authorizer"
    aws_request_id: str = "52fdfc07-2182-154f-163f-5f0f9a621d72"


def request_event(authorization: str | None, header_name: str = "Authorization") -> dict[str, Any]:
    event = copy.deepcopy(REQUEST_EVENT)
    if authorization is not None:
        event["headers"][header_name] = authorization
    return event


@pytest.fixture
def key_store(aws: None, handler_env: pytest.MonkeyPatch) -> DynamoApiKeyStore:
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=API_KEYS_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "key_hash", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "key_hash", "KeyType": "HASH"}],
    )
    handler_env.setenv("AGENT_MEMORY_API_KEYS_TABLE", API_KEYS_TABLE)
    # built lazily from the environment, inside moto
    handler_env.setattr(authorizer, "key_store", Lazy(authorizer.build_key_store))
    return DynamoApiKeyStore(API_KEYS_TABLE, client)


# --------------------------------------------------------------------------- key store


def test_given_new_key_when_created_then_only_its_hash_is_stored(key_store: DynamoApiKeyStore):
    key, key_id = key_store.create("acme", ["/projects/*", "/users/u-42"], ["read", "write"])

    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=API_KEYS_TABLE)["Items"]
    assert len(items) == 1
    assert items[0]["key_hash"]["S"] == hashlib.sha256(key.encode()).hexdigest()
    assert key not in str(items)
    stored = key_store.get(hash_api_key(key))
    assert stored is not None
    assert (stored.tenant, stored.key_id, stored.disabled) == ("acme", key_id, False)
    assert stored.namespaces == ("/projects/*", "/users/u-42")
    assert stored.scopes == ("read", "write")


@pytest.mark.parametrize(
    ("tenant", "namespaces", "scopes"),
    [
        ("ACME", ["*"], ["read"]),
        ("acme", [], ["read"]),
        ("acme", ["projects"], ["read"]),
        ("acme", ["*"], ["root"]),
    ],
)
def test_given_invalid_key_request_when_created_then_validation_error(
    key_store: DynamoApiKeyStore, tenant: str, namespaces: list[str], scopes: list[str]
):
    with pytest.raises(ValidationFailed):
        key_store.create(tenant, namespaces, scopes)


# --------------------------------------------------------------------------- authorizer


def test_given_valid_key_when_authorized_then_allow_policy_for_the_stage_and_context(
    key_store: DynamoApiKeyStore,
):
    key, key_id = key_store.create("acme", ["/projects/*", "/users/u-42"], ["read", "write"])

    response = authorizer.handler(request_event(f"Bearer {key}"), LambdaContext())

    assert response["principalId"] == key_id
    (statement,) = response["policyDocument"]["Statement"]
    assert statement == {
        "Action": "execute-api:Invoke",
        "Effect": "Allow",
        "Resource": ["arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/*/*"],
    }
    assert response["context"] == {
        "tenant": "acme",
        "namespaces": "/projects/*,/users/u-42",
        "scopes": "read,write",
        "key_id": key_id,
    }


def test_given_lowercase_header_and_scheme_when_authorized_then_allowed(key_store: DynamoApiKeyStore):
    key, _ = key_store.create("acme", ["*"], ["read"])

    response = authorizer.handler(
        request_event(f"bearer {key}", header_name="authorization"), LambdaContext()
    )

    assert response["context"]["tenant"] == "acme"


def test_given_token_authorizer_event_when_authorized_then_allowed(key_store: DynamoApiKeyStore):
    key, key_id = key_store.create("globex", ["*"], ["admin"])
    event = {"type": "TOKEN", "authorizationToken": f"Bearer {key}", "methodArn": METHOD_ARN}

    response = authorizer.handler(event, LambdaContext())

    assert response["principalId"] == key_id
    assert response["context"]["scopes"] == "admin"


@pytest.mark.parametrize(
    "authorization", [None, "", "Bearer", "Basic dXNlcjpwYXNz", "Bearer amk_unknown", "Bearer two tokens"]
)
def test_given_missing_or_unknown_key_when_authorized_then_unauthorized(
    key_store: DynamoApiKeyStore, authorization: str | None
):
    key_store.create("acme", ["*"], ["read"])

    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorizer.handler(request_event(authorization), LambdaContext())


def test_given_disabled_key_when_authorized_then_unauthorized(key_store: DynamoApiKeyStore):
    key, _ = key_store.create("acme", ["*"], ["read"])
    key_store.disable(hash_api_key(key))

    with pytest.raises(authorizer.Unauthorized, match=r"^Unauthorized$"):
        authorizer.handler(request_event(f"Bearer {key}"), LambdaContext())


def test_given_key_table_throttling_when_authorized_then_not_reported_as_unauthorized(
    monkeypatch: pytest.MonkeyPatch,
):
    # A failing lookup must surface as an error (API Gateway: 500), never as a bad key (401).
    client = boto3.client("dynamodb", region_name=REGION)
    store = DynamoApiKeyStore(API_KEYS_TABLE, client)
    monkeypatch.setattr(authorizer, "key_store", Lazy(lambda: ApiKeyLookup(store)))
    with Stubber(client) as stubber:
        stubber.add_client_error("get_item", "ProvisionedThroughputExceededException", "slow down", 400)

        with pytest.raises(UpstreamUnavailable):
            authorizer.handler(request_event("Bearer amk_whatever"), LambdaContext())


# Run in a fresh interpreter: records every botocore client created while the authorizer module is imported,
# then while its key store is asked for twice.
IMPORT_PROBE = """
import json
import botocore.session

created = []
original = botocore.session.Session.create_client


def counting(self, service_name, *args, **kwargs):
    created.append(service_name)
    return original(self, service_name, *args, **kwargs)


botocore.session.Session.create_client = counting
from agent_memory.handlers import authorizer

at_import = list(created)
first, second = authorizer.key_store(), authorizer.key_store()
print(json.dumps({"at_import": at_import, "after_two_uses": created, "same_store": first is second}))
"""


def test_given_module_imported_then_no_client_built_until_first_request():
    # Given everything the store needs (so an eager build at import would succeed rather than fail)
    env = {
        **os.environ,
        "AGENT_MEMORY_API_KEYS_TABLE": API_KEYS_TABLE,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }

    # When a fresh interpreter imports the module (a cold start) and then uses the store twice
    probe = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], env=env, capture_output=True, text=True, check=True
    )

    # Then the import built no AWS client; the first use built the one DynamoDB client, the second reused it
    assert json.loads(probe.stdout.strip().splitlines()[-1]) == {
        "at_import": [],
        "after_two_uses": ["dynamodb"],
        "same_store": True,
    }


def test_given_requests_then_the_client_is_built_on_the_first_and_reused(
    key_store: DynamoApiKeyStore, monkeypatch: pytest.MonkeyPatch
):
    # Given a key, no store built yet (the fixture resets it) and every boto3 client creation counted
    key, _ = key_store.create("acme", ["*"], ["read"])
    created: list[str] = []
    real_client = boto3.client

    def counting_client(service_name: str, *args: Any, **kwargs: Any) -> Any:
        created.append(service_name)
        return real_client(service_name, *args, **kwargs)

    monkeypatch.setattr(boto3, "client", counting_client)

    # When three requests arrive in the same execution environment
    first = authorizer.handler(request_event(f"Bearer {key}"), LambdaContext())
    assert created == ["dynamodb"]  # built by the first request
    store = authorizer.key_store()
    for _ in range(2):
        assert authorizer.handler(request_event(f"Bearer {key}"), LambdaContext()) == first

    # Then that one client served all three: nothing more was built and the store is the same object
    assert created == ["dynamodb"]
    assert authorizer.key_store() is store


def test_given_no_key_table_configured_when_the_store_is_first_needed_then_the_error_names_the_variable(
    handler_env: pytest.MonkeyPatch,
):
    handler_env.setattr(authorizer, "key_store", Lazy(authorizer.build_key_store))
    handler_env.delenv("AGENT_MEMORY_API_KEYS_TABLE", raising=False)

    with pytest.raises(Misconfigured, match="AGENT_MEMORY_API_KEYS_TABLE"):
        authorizer.key_store()
