"""Offline AWS for the adapter tests: moto in-process (DynamoDB, S3 Vectors, STS) with fake credentials.

No test here needs an AWS account or the network: every boto3 client is created inside `mock_aws`, the
credentials are fake, and S3 Vectors' missing QueryVectors is added by `moto_s3vectors.install`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

# The `pytest` script does not put the repository root on sys.path; the helpers and the shared contract
# suites are imported as `tests.*`.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.aws import moto_s3vectors  # noqa: E402
from tests.aws.support import REGION, VECTOR_BUCKET, create_memory_table  # noqa: E402


@pytest.fixture(autouse=True)
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region, so nothing can pick up a developer's real profile."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    moto_s3vectors.install(monkeypatch)
    with mock_aws():
        yield


@pytest.fixture
def dynamodb(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name=REGION)
    create_memory_table(client)
    return client


@pytest.fixture
def s3vectors(aws: None) -> Any:
    client = boto3.client("s3vectors", region_name=REGION)
    client.create_vector_bucket(vectorBucketName=VECTOR_BUCKET)
    return client
