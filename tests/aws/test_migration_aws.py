"""The embedding migration on the AWS runtime, offline: `wiring.build_aws` with the migration wired (DynamoDB
state, dead letters and embedding cache; S3 Vectors indexes `mem-<tenant>` and `mem-<tenant>.e1`; archive to S3),
and the backfill run by the real state machine (workflows/migration_asl.py) in moto's Step Functions
interpreter, whose Lambda tasks call the real `handlers/migration.py` in-process (as
tests/aws/test_dreaming_stepfunctions.py does for dreaming)."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.migration import build_embedder_spec
from agent_memory.domain.errors import Conflict, EmbedderDrift
from agent_memory.domain.memory.service import RecallInput, RememberInput
from agent_memory.domain.migration.model import MigrationState
from agent_memory.domain.ports import IndexFilter
from agent_memory.handlers import migration as migration_handler
from agent_memory.settings.service import Settings
from agent_memory.wiring.aws import build_aws
from agent_memory.wiring.parts import AwsClients
from infra.workflows.migration_asl import build_definition
from tests.aws import moto_s3vectors
from tests.aws.support import REGION, TABLE, VECTOR_BUCKET, create_memory_table
from tests.conftest import ShiftedClock

TENANT = "alpha"
NS = "/notes"
ARCHIVE_BUCKET = "agent-memory-migration-archive"
FUNCTION = f"arn:aws:lambda:{REGION}:123456789012:function:agent-memory-migration"
STATE_LIMIT = 256 * 1024


class FakeContext:
    function_name = "agent-memory-migration"
    memory_limit_in_mb = 1024
    invoked_function_arn = FUNCTION
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


class LambdaRuntime:
    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []

    def invoke(self, backend, function_name, qualifier, body, headers, response_headers) -> bytes:
        payload = json.loads(body)
        self.payloads.append(payload)
        try:
            result = migration_handler.handler(payload, FakeContext())
        except Exception as error:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}).encode()
        self.results.append(result)
        return json.dumps(result).encode()


@pytest.fixture
def aws(monkeypatch):
    runtime = LambdaRuntime()
    monkeypatch.setattr(
        LambdaSimpleBackend,
        "invoke",
        lambda self, name, qualifier, body, headers, response_headers: runtime.invoke(
            self, name, qualifier, body, headers, response_headers
        ),
    )
    moto_s3vectors.install(monkeypatch)
    with mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}):
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_memory_table(dynamodb)
        boto3.client("s3vectors", region_name=REGION).create_vector_bucket(vectorBucketName=VECTOR_BUCKET)
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=ARCHIVE_BUCKET)
        role = boto3.client("iam", region_name=REGION).create_role(
            RoleName="TenantAccessRole",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        stepfunctions = boto3.client("stepfunctions", region_name=REGION)
        machine = stepfunctions.create_state_machine(
            name="migration",
            definition=json.dumps(build_definition(FUNCTION, partition="aws")),
            roleArn=role,
        )["stateMachineArn"]
        settings = Settings(
            runtime="aws",
            table=TABLE,
            vector_bucket=VECTOR_BUCKET,
            tenant_role_arn=role,
            region=REGION,
            migration_state_machine_arn=machine,
            migration_archive_bucket=ARCHIVE_BUCKET,
        )
        clients = AwsClients(sts=boto3.client("sts", region_name=REGION), stepfunctions=stepfunctions)
        # The target model: the hashing embedder at 128 dimensions stands in for a Bedrock model spec.
        clock = ShiftedClock()  # the system time, moved forward by hand past the routing's 1 s state cache
        services = build_aws(
            settings,
            clients,
            embedder=HashingEmbedder(),
            clock=clock,
            migration_embedders=build_embedder_spec,
        )
        migration_handler.configure(lambda: services.migration)
        try:
            yield services, stepfunctions, runtime, clock
        finally:
            migration_handler.configure(None)


def wait(stepfunctions, execution_arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        described = stepfunctions.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING" or time.monotonic() > deadline:
            return described
        time.sleep(0.05)


def similarities(services, query: str) -> list[float]:
    result = services.memory.recall(TENANT, RecallInput(query=query, namespaces=(NS,), mode="vector"))
    return [item.fused.similarity for item in result.results]


def test_the_backfill_state_machine_runs_the_real_handler_and_the_lifecycle_completes_on_aws(
    aws, capsys
) -> None:
    services, stepfunctions, runtime, clock = aws
    for i in range(12):
        services.memory.remember(
            TENANT, RememberInput(content=f"service {i} listens on port {9000 + i}", namespace=NS), actor="t"
        )
    before = similarities(services, "which service listens on port 9004")
    migration = services.migration
    planned = migration.plan(TENANT, "hashing@128", actor="ops")
    assert planned.target.index == "e1"
    started = migration.start(TENANT, actor="ops")
    assert started.execution and started.execution.startswith("arn:aws:states:")
    described = wait(stepfunctions, started.execution)
    assert described["status"] == "SUCCEEDED", described
    output = json.loads(described["output"])
    assert output["state"] == "verifying" and output["dead_letters"] == 0
    assert [p["task"] for p in runtime.payloads] == ["run_pages"]
    # The state between steps stays small whatever the tenant's size (the checkpoint is in DynamoDB).
    history = stepfunctions.get_execution_history(executionArn=started.execution)["events"]
    for event in history:
        for details in event.values():
            if isinstance(details, dict) and isinstance(details.get("input") or details.get("output"), str):
                assert len((details.get("input") or details.get("output")).encode()) < STATE_LIMIT

    vectors = boto3.client("s3vectors", region_name=REGION)
    target_index = vectors.get_index(vectorBucketName=VECTOR_BUCKET, indexName=f"mem-{TENANT}.e1")["index"]
    assert target_index["dimension"] == 128  # created by the migration with the tenant role, not by cdk
    status = migration.status(TENANT)
    assert status.migration.state is MigrationState.VERIFYING
    assert status.coverage == 1.0 and status.records == status.target_vectors == 12
    assert status.migration.verification and status.migration.verification.passed
    assert similarities(services, "which service listens on port 9004") == before  # reads still on the old

    old = HashingEmbedder(384)
    migration.switch(TENANT, actor="ops")
    clock.advance(seconds=1.1)  # the routing's 1 s state cache (route_ttl_seconds) expires
    after = similarities(services, "which service listens on port 9004")
    assert after != before
    with pytest.raises(EmbedderDrift):  # the drift guard: an old-model vector against the new index
        services.memory._index.query_vector(
            TENANT, old.identity, old.embed_query("port"), k=3, where=IndexFilter(namespaces=(NS,))
        )
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "_aws" in line]
    assert any(
        m.get("EmbedderDriftRefusals") == [1.0] or m.get("EmbedderDriftRefusals") == 1 for m in emitted
    )

    archived = migration.archive(TENANT, actor="ops")
    assert archived.state is MigrationState.ARCHIVED
    receipt = archived.archive
    assert receipt and receipt.vectors == receipt.verified_count == 12
    s3 = boto3.client("s3", region_name=REGION)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=ARCHIVE_BUCKET)["Contents"]]
    assert f"{TENANT}/{archived.id}/manifest.json" in keys
    part = next(k for k in keys if k.endswith(".jsonl"))
    tags = s3.get_object_tagging(Bucket=ARCHIVE_BUCKET, Key=part)["TagSet"]
    assert {"Key": "agent-memory-archive", "Value": "vectors"} in tags  # the Glacier lifecycle rule's filter
    lines = s3.get_object(Bucket=ARCHIVE_BUCKET, Key=part)["Body"].read().decode().splitlines()
    assert len(lines) == 12 and len(json.loads(lines[0])["data"]["float32"]) == 384
    with pytest.raises(vectors.exceptions.NotFoundException):
        vectors.get_index(vectorBucketName=VECTOR_BUCKET, indexName=f"mem-{TENANT}")
    clock.advance(seconds=1.1)
    assert similarities(services, "which service listens on port 9004") == after
    with pytest.raises(Conflict):
        migration.rollback(TENANT, actor="ops")


def test_a_rollback_while_the_state_machine_runs_ends_the_loop_and_restores_the_old_model(aws) -> None:
    services, stepfunctions, _, _ = aws
    for i in range(5):
        services.memory.remember(
            TENANT, RememberInput(content=f"fact {i} about queues", namespace=NS), actor="t"
        )
    migration = services.migration
    migration.plan(TENANT, "hashing@128", actor="ops")
    migration.start(TENANT, actor="ops", launch=False)
    migration.rollback(TENANT, actor="ops", reason="wrong model")
    execution = migration.launcher.start(TENANT, migration.get(TENANT).id)
    described = wait(stepfunctions, execution)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"])["state"] == "rolled_back"
    assert migration.get(TENANT).state is MigrationState.ROLLED_BACK
    vectors = boto3.client("s3vectors", region_name=REGION)
    with pytest.raises(vectors.exceptions.NotFoundException):  # the target index was dropped
        vectors.get_index(vectorBucketName=VECTOR_BUCKET, indexName=f"mem-{TENANT}.e1")
    # A new plan is allowed once the previous migration is finished (the DynamoDB open marker was removed).
    assert migration.plan(TENANT, "hashing@128", actor="ops").generation == 2


def test_the_state_machine_fails_visibly_when_the_handler_keeps_failing(aws) -> None:
    services, stepfunctions, _, _ = aws
    services.memory.remember(TENANT, RememberInput(content="one fact", namespace=NS), actor="t")
    execution = services.migration.launcher.start(TENANT, "mig_unknown")
    described = wait(stepfunctions, execution)
    assert described["status"] == "FAILED"
    assert described.get("error") == "BackfillFailed"
