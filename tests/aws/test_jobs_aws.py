"""Jobs on the AWS runtime (issue 29), on moto: a large batch or an import answers 202 with the same job
resource as the local server; the job item lives in the MemoryTable under the tenant's keys, a large request
is staged in S3 under `<tenant>/jobs/`, and the job function (`handlers/job_worker.py`) runs the event the
API queued with an asynchronous Lambda invoke. The events are held here and run by the test, so every state
between (queued, running, finished) can be looked at. The IAM contract judges every call (tests/iam)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.adapters.aws.job_store import DynamoJobStore, staged_key
from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.domain.errors import UpstreamUnavailable
from agent_memory.domain.jobs.config import JobConfig
from agent_memory.settings.service import Settings
from agent_memory.wiring.aws import build_aws
from agent_memory.wiring.parts import AwsClients
from tests.archives import memory_archive
from tests.aws import moto_s3vectors
from tests.aws.file_function import (
    FILE_FUNCTION,
    JOB_FUNCTION,
    JobFunctionContext,
    file_function_serving,
    in_process_lambda_client,
)
from tests.aws.support import REGION, TABLE, VECTOR_BUCKET, create_memory_table, lambda_environment
from tests.behaviour.conftest import LambdaClient

STAGING_BUCKET = "job-staging-bucket"  # bound_name("AGENT_MEMORY_JOB_STAGING_BUCKET")
THRESHOLD = 4
"""The runtime's `jobs.batch_threshold` here (25 by default): what is tested is the crossing of the threshold
the settings give, not the number, so a large batch is a few items rather than 26 writes on moto."""
LARGE = THRESHOLD + 1
LOST_AFTER_SECONDS = 22_800
"""What the stack sets (the job function's 6 h maximum event age + 900 s + 300 s; tests/infra/test_infra_jobs.py)."""


class Runtime:
    def __init__(self, services: Any, events: list[dict[str, Any]]) -> None:
        self.services, self.events = services, events

    def run(self, event: dict[str, Any]) -> dict[str, Any]:
        from agent_memory.handlers.job_worker import handler

        return handler(event, JobFunctionContext())

    def run_all(self) -> list[dict[str, Any]]:
        done = [self.run(event) for event in self.events]
        self.events.clear()
        return done


@pytest.fixture(scope="module")
def aws(tmp_path_factory) -> Iterator[Runtime]:
    import agent_memory.handlers.api as api_handler
    from agent_memory.handlers import job_worker

    with pytest.MonkeyPatch.context() as patch:
        lambda_environment(patch)
        moto_s3vectors.install(patch)
        with mock_aws():
            dynamodb = boto3.client("dynamodb", region_name=REGION)
            create_memory_table(dynamodb)
            records = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
            for tenant in ("alpha", "beta"):
                records.backfill_tree_index(tenant)
            boto3.client("s3vectors", region_name=REGION).create_vector_bucket(vectorBucketName=VECTOR_BUCKET)
            boto3.client("s3", region_name=REGION).create_bucket(Bucket=STAGING_BUCKET)
            role = boto3.client("iam", region_name=REGION).create_role(
                RoleName="TenantAccessRole",
                AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
            )["Role"]["Arn"]
            settings = Settings(
                runtime="aws",
                table=TABLE,
                vector_bucket=VECTOR_BUCKET,
                tenant_role_arn=role,
                file_function=FILE_FUNCTION,
                job_function=JOB_FUNCTION,
                job_staging_bucket=STAGING_BUCKET,
                region=REGION,
                jobs=JobConfig(batch_threshold=THRESHOLD, lost_after_seconds=LOST_AFTER_SECONDS),
            )
            events: list[dict[str, Any]] = []
            clients = AwsClients(
                sts=boto3.client("sts", region_name=REGION),
                lambda_=in_process_lambda_client(jobs=events.append),
            )
            services = build_aws(settings, clients, embedder=HashingEmbedder())
            api_handler.set_services(services)
            job_worker.graph.set(services)
            with file_function_serving(tmp_path_factory.mktemp("mnt-memory")):
                try:
                    yield Runtime(services, events)
                finally:
                    api_handler.set_services(None)
                    job_worker.graph.set(None)


def _items(namespace: str, count: int, word: str) -> list[dict[str, Any]]:
    return [
        {"namespace": namespace, "content": f"{word} fact number {n}: the {word} service owns queue {n}"}
        for n in range(count)
    ]


def _get(who: str, location: str) -> Any:
    return LambdaClient(who).get(location)


def _job_store(aws: Runtime) -> DynamoJobStore:
    return aws.services.jobs._store  # the one the API and the job function share


def _staged(key: str) -> bool:
    listed = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=STAGING_BUCKET, Prefix=key)
    return listed.get("KeyCount", 0) > 0


def test_a_large_batch_answers_202_and_the_job_function_stores_what_the_route_would(aws: Runtime) -> None:
    items = _items("/projects/jobs", LARGE + 1, "heron")
    answer = LambdaClient("alpha").post("/v1/memories/batch", json={"items": items})
    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert (
        job["status"] == "queued"
        and job["kind"] == "memory_batch"
        and job["progress"] == {"done": 0, "total": LARGE + 1}
    )
    assert answer.headers["Location"] == job["location"] == f"/v1/jobs/{job['id']}"
    assert answer.headers["Retry-After"] == "1"
    assert aws.events == [{"tenant": "alpha", "job_id": job["id"]}]  # only names: the request stays stored
    waiting = _get("alpha", job["location"])
    assert waiting.status_code == 200 and waiting.json()["status"] == "queued"
    assert waiting.headers["Retry-After"] == "1"

    seen_running: list[str] = []
    memory = aws.services.memory
    original = memory.remember_batch

    def watched(*args: Any, **kwargs: Any) -> Any:  # while the job runs, its resource says so
        seen_running.append(_get("alpha", job["location"]).json()["status"])
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "remember_batch", watched)
        assert aws.run_all() == [{"job": job["id"], "ran": True, "status": "succeeded"}]
    assert seen_running == ["running"]

    done = _get("alpha", job["location"])
    body = done.json()
    assert done.status_code == 200 and "Retry-After" not in done.headers
    assert body["status"] == "succeeded" and body["progress"] == {"done": LARGE + 1, "total": LARGE + 1}
    assert body["result"]["counts"] == {"added": LARGE + 1}
    # The same items through the synchronous path (the service the route calls), in another namespace:
    # the same decisions, and the same memories stored.
    from agent_memory.domain.memory.inputs import RememberInput

    direct = original(
        "alpha", [RememberInput(namespace="/projects/direct", content=i["content"]) for i in items], actor="t"
    )
    assert [r["decision"] for r in body["result"]["results"]] == [d.decision.value for d in direct]
    stored = LambdaClient("alpha").get("/v1/memories", params={"namespace": "/projects/jobs", "limit": 100})
    contents = sorted(m["content"] for m in stored.json()["items"])
    assert contents == sorted(i["content"] for i in items)


def test_a_small_batch_stays_synchronous(aws: Runtime) -> None:
    answer = LambdaClient("alpha").post(
        "/v1/memories/batch", json={"items": _items("/projects/small", THRESHOLD, "owl")}
    )  # as many items as the threshold: still answered within the request
    assert answer.status_code == 200 and answer.json()["counts"] == {"added": THRESHOLD}
    assert aws.events == []


def test_a_large_import_is_staged_under_its_tenant_prefix_and_unstaged_when_done(aws: Runtime) -> None:
    body = {
        "namespace": "/projects/imported",
        "archive": memory_archive(12, padding=200_000),
        "format": "openclaw",
    }
    answer = LambdaClient("alpha").post("/v1/imports", json=body)
    assert answer.status_code == 202, answer.text
    job = answer.json()
    key = staged_key("alpha", job["id"])
    assert key == f"alpha/jobs/{job['id']}.json" and _staged(key)
    assert _job_store(aws).payload("alpha", job["id"]) is not None
    aws.run_all()
    done = _get("alpha", job["location"]).json()
    assert done["status"] == "succeeded", done
    report = done["result"]["report"]
    assert report["state"] == "completed" and done["progress"]["done"] == done["progress"]["total"] > 0
    assert LambdaClient("alpha").get(f"/v1/imports/{report['id']}").status_code == 200
    assert not _staged(key)  # the request is gone once the job is over
    assert _job_store(aws).payload("alpha", job["id"]) is None


def test_another_tenant_or_key_never_reaches_a_job_or_its_staged_request(aws: Runtime) -> None:
    body = {
        "namespace": "/projects/private",
        "archive": memory_archive(3, padding=200_000),
        "format": "openclaw",
    }
    job = LambdaClient("alpha").post("/v1/imports", json=body).json()
    aws.events.clear()
    assert _get("beta", job["location"]).status_code == 404  # another tenant
    assert _get("alpha-projects-rw", job["location"]).status_code == 404  # another key of alpha
    # The job function handed a forged event (beta, alpha's job id) reads with beta's credentials: no job
    # there, alpha's job untouched, and beta's session cannot get alpha's staged object.
    assert aws.run({"tenant": "beta", "job_id": job["id"]}) == {"job": job["id"], "ran": False}
    assert _job_store(aws).payload("beta", job["id"]) is None
    assert _get("alpha", job["location"]).json()["status"] == "queued"
    assert _staged(staged_key("alpha", job["id"]))
    aws.run({"tenant": "alpha", "job_id": job["id"]})
    assert _get("alpha", job["location"]).json()["status"] == "succeeded"


def test_a_failed_job_reports_a_clear_error_and_loses_nothing(aws: Runtime) -> None:
    kept = LambdaClient("alpha").post(
        "/v1/memories/batch", json={"items": _items("/projects/fail", 2, "kept")}
    )
    assert kept.status_code == 200
    job = (
        LambdaClient("alpha")
        .post("/v1/memories/batch", json={"items": _items("/projects/fail", LARGE, "x")})
        .json()
    )

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise UpstreamUnavailable(
            "Bedrock is unavailable or throttling during InvokeModel; retry in a few seconds"
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aws.services.memory, "remember_batch", unavailable)
        assert aws.run_all()[0]["status"] == "failed"
    failed = _get("alpha", job["location"]).json()
    assert failed["status"] == "failed" and failed["result"] is None
    assert failed["error"]["error"] == "upstream_unavailable" and "retry" in failed["error"]["message"]
    assert _job_store(aws).payload("alpha", job["id"]) is None  # its request is removed with the job's end
    listed = LambdaClient("alpha").get("/v1/memories", params={"namespace": "/projects/fail", "limit": 100})
    assert sorted(m["content"] for m in listed.json()["items"]) == sorted(
        i["content"] for i in _items("/projects/fail", 2, "kept")
    )


def test_a_retried_or_duplicate_event_runs_the_job_once(aws: Runtime) -> None:
    job = (
        LambdaClient("alpha")
        .post("/v1/memories/batch", json={"items": _items("/projects/retry", LARGE, "wren")})
        .json()
    )
    event = aws.events.pop()
    # A first invocation crashes on an error of its own after the work (the store write of the outcome):
    # Lambda will retry the event; the lease was ended so the retry can take the job up at once.
    store = _job_store(aws)
    original = store.save

    def crash_on_outcome(job_: Any, payload: str | None = None) -> None:
        if job_.status.value == "succeeded":
            raise ConnectionError("the runtime lost its connection")
        original(job_, payload)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "save", crash_on_outcome)
        with pytest.raises(ConnectionError):
            aws.run(event)
    assert _get("alpha", job["location"]).json()["status"] == "running"
    retried = aws.run(event)  # Lambda's retry
    assert retried["status"] == "succeeded"
    result = _get("alpha", job["location"]).json()["result"]
    assert result["counts"] == {"merged": LARGE}  # the first run's memories, found again: none stored twice
    assert aws.run(event) == {"job": job["id"], "ran": False}  # a duplicate of a finished job: nothing
    listed = LambdaClient("alpha").get("/v1/memories", params={"namespace": "/projects/retry", "limit": 100})
    assert len(listed.json()["items"]) == LARGE


def test_an_event_for_a_job_held_under_a_live_lease_does_nothing(aws: Runtime) -> None:
    job = (
        LambdaClient("alpha")
        .post("/v1/memories/batch", json={"items": _items("/projects/lease", LARGE, "kite")})
        .json()
    )
    event = aws.events.pop()
    store, clock = _job_store(aws), aws.services.jobs._clock
    held = store.get("alpha", job["id"])
    held.status, held.lease_until = held.status.RUNNING, clock.now() + timedelta(minutes=10)
    assert store.claim(held)
    assert aws.run(event) == {"job": job["id"], "ran": False}  # another invocation has it
    held.lease_until = clock.now() - timedelta(seconds=1)  # that invocation timed out: its lease is over
    store.save(held)
    assert aws.run(event)["status"] == "succeeded"


def test_a_job_lambda_did_not_queue_fails_at_once_with_the_reason(aws: Runtime) -> None:
    jobs = aws.services.jobs
    runner = jobs._runner
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "_client", in_process_lambda_client())  # no job function in this account
        answer = LambdaClient("alpha").post(
            "/v1/memories/batch", json={"items": _items("/projects/lost", LARGE, "jay")}
        )
    assert answer.status_code == 500 and answer.json()["error"] == "misconfigured", answer.text
    assert "job function" in answer.json()["message"]
    failed = [j for j in _job_store(aws).queued("alpha") if j.namespaces == ["/projects/lost"]]
    assert failed == []  # not left queued with no event to run it


def test_a_job_whose_event_lambda_gave_up_on_is_answered_lost_not_running(aws: Runtime) -> None:
    # Given a large batch accepted with 202 whose event never ran (every retry failed: it is in the DLQ)
    answer = LambdaClient("alpha").post(
        "/v1/memories/batch", json={"items": _items("/projects/dead-letter", LARGE, "kay")}
    )
    assert answer.status_code == 202, answer.text
    location, events = answer.headers["Location"], list(aws.events)
    aws.events.clear()
    assert _get("alpha", location).json()["status"] == "queued"  # young: an event may still run it
    # When it is older than the stack's bound
    store = _job_store(aws)
    job = store.get("alpha", location.rsplit("/", 1)[1])
    assert job is not None
    job.created_at -= timedelta(seconds=LOST_AFTER_SECONDS + 1)
    store.save(job)
    # Then a poll answers it failed `lost` (submit again), and a very late event writes nothing
    body = _get("alpha", location).json()
    assert body["status"] == "failed" and body["error"]["error"] == "lost", body
    assert [aws.run(event)["ran"] for event in events] == [False]
    listed = LambdaClient("alpha").get("/v1/memories", params={"namespace": "/projects/dead-letter"})
    assert listed.status_code == 200 and listed.json()["items"] == []


def test_a_purge_of_a_jobs_namespace_erases_the_job_and_its_request(aws: Runtime) -> None:
    ns = "/projects/purged-job"
    purger = LambdaClient("alpha-purger")
    done = purger.post("/v1/memories/batch", json={"items": _items(ns, LARGE, "grebe")}).json()
    aws.run_all()
    body = {"namespace": ns, "archive": memory_archive(3, padding=200_000), "format": "openclaw"}
    waiting = purger.post("/v1/imports", json=body).json()  # not run yet: its request is staged
    aws.events.clear()
    assert _get("alpha-purger", done["location"]).json()["status"] == "succeeded"
    assert _staged(staged_key("alpha", waiting["id"]))
    planned = purger.post("/v1/admin/purges", json={"kind": "namespace", "namespace": ns}).json()
    assert any(s["store"] == "jobs" and s["items"] == 2 for s in planned["plan"]), planned["plan"]
    executed = purger.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": "test erasure"})
    assert executed.json()["state"] == "completed", executed.text
    for job in (done, waiting):
        assert _get("alpha-purger", job["location"]).status_code == 404
    assert not _staged(staged_key("alpha", waiting["id"]))
