"""The skills curator's state machine executed offline by moto's Step Functions interpreter, every Lambda task
running the real dreaming function's handler (which dispatches the curator's tasks) in-process on a local file
store (the pattern of test_dreaming_stepfunctions.py)."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.skills.curator import CuratorService
from agent_memory.domain.skills.document import SkillStatus
from agent_memory.domain.skills.service import SkillsService
from agent_memory.handlers import curator as curator_handlers
from agent_memory.handlers import dreaming as dreaming_handlers
from infra.workflows.curator_asl import build_definition
from tests.aws.support import REGION

TENANT = "acme"
BILLING, INFRA, EMPTY = "/projects/billing", "/projects/infra", "/projects/empty"
FUNCTION = f"arn:aws:lambda:{REGION}:123456789012:function:agent-memory-dreaming"


class FakeContext:
    function_name = "agent-memory-dreaming"
    memory_limit_in_mb = 1024
    invoked_function_arn = FUNCTION
    aws_request_id = "req-1"


@pytest.fixture
def curated(tmp_path: Path, clock, monkeypatch) -> Any:
    files = PosixFileStore(tmp_path)
    skills = SkillsService(files, safety.first_rule, clock)
    for namespace in (BILLING, INFRA):
        skills.create(TENANT, namespace, "old-steps", description="Old", body="## Steps\nA", actor="agent")
    (tmp_path / TENANT / EMPTY.lstrip("/")).mkdir(parents=True)  # a namespace without skills: not a target
    clock.advance(days=40)
    curator = CuratorService(
        skills,
        files,
        clock,
        namespace_lister=lambda tenant: sorted(
            "/" + p.relative_to(tmp_path / tenant).as_posix()
            for p in (tmp_path / tenant / "projects").iterdir()
        ),
    )
    calls: list[str] = []

    def invoke(self, name, qualifier, body, headers, response_headers) -> bytes:
        payload = json.loads(body)
        calls.append(payload.get("task"))
        try:
            result = dreaming_handlers.handler(payload, FakeContext())
        except Exception as error:  # the Lambda runtime reports any exception as a function error
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}).encode()
        return json.dumps(result).encode()

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    curator_handlers.configure(curator)
    yield skills, calls, tmp_path, clock
    curator_handlers.configure(None)


def _execute(execution_input: dict[str, Any]) -> dict[str, Any]:
    definition = build_definition(FUNCTION, partition="aws", max_concurrency=2)
    with mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}):
        client = boto3.client("stepfunctions", region_name=REGION)
        machine = client.create_state_machine(
            name="agent-memory-curator",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/curator-workflow",
        )
        started = client.start_execution(
            stateMachineArn=machine["stateMachineArn"], name="weekly-1", input=json.dumps(execution_input)
        )
        deadline = time.monotonic() + 240
        while True:
            described = client.describe_execution(executionArn=started["executionArn"])
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                return described
            time.sleep(0.05)


def test_given_two_namespaces_one_locked_then_one_is_curated_and_the_other_fails_alone(curated) -> None:
    skills, calls, root, clock = curated
    lease = {"owner": "cur_manual", "expires_at": (clock.now() + timedelta(hours=1)).isoformat()}
    (root / TENANT / "projects/infra/.curator").mkdir(parents=True)
    (root / TENANT / "projects/infra/.curator/lock.json").write_text(json.dumps(lease))

    described = _execute({"tenants": [TENANT]})

    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"completed": 1, "failed": 1}
    assert sorted(calls) == ["curate", "curate", "curator_targets"]
    assert skills.get(TENANT, BILLING, "old-steps").meta.status is SkillStatus.STALE
    assert (
        skills.get(TENANT, INFRA, "old-steps").meta.status is SkillStatus.ACTIVE
    )  # the locked one: untouched
    day = clock.now().date().isoformat()
    assert (root / TENANT / f"projects/billing/.curator/{day}/run.json").exists()
    assert not (root / TENANT / f"projects/infra/.curator/{day}").exists()
