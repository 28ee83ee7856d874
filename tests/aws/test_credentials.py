"""Tenant credentials on moto STS: the session tag IAM relies on, the cache, refresh, thread safety."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from agent_memory.adapters.aws.credentials import ClientFactory, TenantCredentials
from agent_memory.domain.errors import ValidationFailed
from tests.aws.support import REGION, CallCounter

ROLE_ARN = "arn:aws:iam::123456789012:role/TenantAccessRole"


class MovableClock:
    def __init__(self) -> None:
        self.current = datetime.now(UTC)  # moto stamps expirations with the real time

    def now(self) -> datetime:
        return self.current


@pytest.fixture
def sts(aws: None) -> Any:
    return boto3.client("sts", region_name=REGION)


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def credentials(sts: Any, clock: MovableClock) -> TenantCredentials:
    return TenantCredentials(
        sts, ROLE_ARN, "agent-memory", refresh_margin_seconds=300, clock=clock, region_name=REGION
    )


def test_given_tenant_when_credentials_requested_then_role_assumed_with_tenant_session_tag(
    credentials: TenantCredentials, sts: Any
):
    calls = CallCounter(sts)

    issued = credentials.credentials_for("acme")

    (params,) = calls.params("AssumeRole")
    assert params["RoleArn"] == ROLE_ARN
    assert params["Tags"] == [{"Key": "tenant", "Value": "acme"}]
    assert params["RoleSessionName"] == "agent-memory-acme"
    assert issued.access_key_id and issued.session_token
    identity = credentials.session_for("acme").client("sts").get_caller_identity()
    assert identity["Arn"].endswith("assumed-role/TenantAccessRole/agent-memory-acme")


def test_given_cached_credentials_when_requested_again_then_no_second_sts_call(
    credentials: TenantCredentials, sts: Any
):
    first = credentials.credentials_for("acme")
    calls = CallCounter(sts)

    again = credentials.credentials_for("acme")
    other = credentials.credentials_for("globex")

    assert again == first
    assert other.access_key_id != first.access_key_id
    assert [p["Tags"][0]["Value"] for p in calls.params("AssumeRole")] == ["globex"]


def test_given_credentials_close_to_expiry_when_requested_then_refreshed(
    credentials: TenantCredentials, sts: Any, clock: MovableClock
):
    first = credentials.credentials_for("acme")
    calls = CallCounter(sts)

    clock.current = first.expiration - timedelta(seconds=301)
    assert credentials.credentials_for("acme") == first  # still outside the refresh margin
    clock.current = first.expiration - timedelta(seconds=299)
    refreshed = credentials.credentials_for("acme")

    assert calls.count("AssumeRole") == 1
    assert refreshed.access_key_id != first.access_key_id


def test_given_many_threads_when_credentials_requested_then_one_sts_call_per_tenant(
    credentials: TenantCredentials, sts: Any
):
    calls = CallCounter(sts)
    start = threading.Barrier(12)
    results: list[str] = []

    def request(tenant: str) -> None:
        start.wait()
        results.append(credentials.credentials_for(tenant).access_key_id)

    threads = [threading.Thread(target=request, args=("acme" if i % 2 else "globex",)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert calls.count("AssumeRole") == 2
    assert len(set(results)) == 2


def test_given_invalid_tenant_when_credentials_requested_then_refused_without_sts_call(
    credentials: TenantCredentials, sts: Any
):
    calls = CallCounter(sts)

    with pytest.raises(ValidationFailed):
        credentials.credentials_for("Acme/../globex")

    assert calls.count("AssumeRole") == 0


def test_given_client_factory_when_called_then_client_cached_per_tenant_until_refresh(
    credentials: TenantCredentials, clock: MovableClock
):
    factory = ClientFactory("dynamodb", credentials, region=REGION)

    acme = factory("acme")
    assert factory("acme") is acme
    assert factory("globex") is not acme
    key = acme._request_signer._credentials.access_key
    assert key == credentials.credentials_for("acme").access_key_id

    clock.current = credentials.credentials_for("acme").expiration  # past the refresh margin
    renewed = factory("acme")

    assert renewed is not acme
    assert renewed._request_signer._credentials.access_key != key


def test_given_no_tenant_credentials_when_factory_called_then_one_shared_client(aws: None):
    factory = ClientFactory("dynamodb", None, region=REGION)

    assert factory("acme") is factory("globex")
