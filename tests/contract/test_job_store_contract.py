"""The `JobStore` contract (domain/jobs/ports.py), run by both implementations: SQLite (the local server) and
the MemoryTable with S3 staging (AWS, on moto). A job is kept with its payload until it finishes; a claim
succeeds once, on a queued job or on a running one whose lease ended; jobs and payloads are per tenant."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agent_memory.adapters.aws.job_store import INLINE_PAYLOAD_BYTES, DynamoJobStore
from agent_memory.adapters.local.job_store import SqliteJobStore
from agent_memory.domain.jobs.model import Job, JobStatus
from tests.aws.support import REGION, TABLE, create_memory_table

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
BUCKET = "job-staging-bucket"


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    if request.param == "sqlite":
        local = SqliteJobStore(tmp_path / "jobs.db")
        yield local
        local.close()
        return
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_memory_table(dynamodb)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        yield DynamoJobStore(TABLE, lambda tenant: dynamodb, BUCKET, lambda tenant: s3)


def _job(job_id: str = "job_00000000000000000000000a", tenant: str = "alpha") -> Job:
    return Job(id=job_id, tenant=tenant, key_id="key1", kind="memory_batch", created_at=NOW)


def test_a_job_and_its_payload_are_kept_until_it_finishes(store: Any) -> None:
    job = _job()
    store.save(job, '{"request": {"items": []}}')
    assert store.get("alpha", job.id) == job
    assert store.payload("alpha", job.id) == '{"request": {"items": []}}'
    job.status, job.progress.done = JobStatus.RUNNING, 3
    store.save(job)
    assert store.get("alpha", job.id).progress.done == 3
    assert store.payload("alpha", job.id) is not None  # still unfinished: still there
    job.status, job.finished_at, job.result = JobStatus.SUCCEEDED, NOW, {"counts": {"added": 3}}
    store.save(job)
    assert store.get("alpha", job.id).result == {"counts": {"added": 3}}
    assert store.payload("alpha", job.id) is None


def test_a_large_payload_round_trips(store: Any) -> None:
    job, payload = _job(), '{"request": "' + "x" * (INLINE_PAYLOAD_BYTES + 10) + '"}'
    store.save(job, payload)
    assert store.payload("alpha", job.id) == payload
    job.status, job.finished_at = JobStatus.FAILED, NOW
    store.save(job)
    assert store.payload("alpha", job.id) is None


def test_jobs_and_payloads_are_per_tenant(store: Any) -> None:
    job = _job()
    store.save(job, "{}")
    assert store.get("beta", job.id) is None and store.payload("beta", job.id) is None
    assert [j.id for j in store.queued("alpha")] == [job.id] and store.queued("beta") == []


def test_a_claim_takes_a_queued_job_once_and_a_running_one_only_after_its_lease(store: Any) -> None:
    job = _job()
    store.save(job, "{}")
    job.status, job.lease_until = JobStatus.RUNNING, NOW + timedelta(minutes=15)
    assert store.claim(job, lease_expired_at=NOW) is True
    assert store.claim(job, lease_expired_at=NOW) is False  # held: a duplicate event
    assert store.claim(job) is False  # without a lease check only a queued job is taken
    assert store.claim(job, lease_expired_at=NOW + timedelta(minutes=16)) is True  # the first one timed out
    assert store.queued("alpha") == []
    job.status, job.finished_at = JobStatus.SUCCEEDED, NOW
    store.save(job)
    assert store.claim(job, lease_expired_at=NOW + timedelta(days=1)) is False  # never a finished job


def test_a_deleted_job_is_gone_with_its_payload(store: Any) -> None:
    job = _job()
    store.save(job, '{"request": "' + "y" * (INLINE_PAYLOAD_BYTES + 10) + '"}')
    store.delete("alpha", job.id)
    assert store.get("alpha", job.id) is None and store.payload("alpha", job.id) is None
