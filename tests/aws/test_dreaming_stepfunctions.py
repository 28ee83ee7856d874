"""The dreaming state machine executed offline by moto's Step Functions interpreter, with every Lambda task
running the real `handlers/dreaming.py` in-process against the local adapters.

moto 5 executes definitions when `stepfunctions.execute_state_machine` is on; its Docker-free Lambda backend
(`lambda.use_docker: False`) would echo the payload, so the test installs an `invoke` that does what the
Lambda runtime does: call the handler, and on an exception answer `FunctionError: Unhandled` with
`{"errorType", "errorMessage"}`. A 429 from the Invoke API is injected to check the retry path; the
retrier's sleeps are recorded instead of waited.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.exceptions import JsonRESTError
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.handlers import dreaming as dreaming_handlers
from agent_memory.settings.dreaming import DreamingSettings
from agent_memory.workflows.dreaming_asl import DreamingFunctions, RetryPolicy, build_definition
from tests.aws.support import REGION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from dreaming_world import NS, TENANT, World

INFRA = "/projects/infra"
FUNCTION = f"arn:aws:lambda:{REGION}:123456789012:function:agent-memory-dreaming"
INVOICES = "Invoices are generated on the first day of each month by the billing cron job"


class FakeContext:
    function_name = "agent-memory-dreaming"
    memory_limit_in_mb = 1024
    invoked_function_arn = FUNCTION
    aws_request_id = "req-1"


class LambdaRuntime:
    """What moto's Lambda backend runs for each Invoke: the dreaming handler, like the real runtime."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.throttle: dict[tuple[str, str], int] = {}

    def invoke(self, backend, function_name, qualifier, body, headers, response_headers) -> bytes:
        payload = json.loads(body)
        task = payload.get("task")
        namespace = (payload.get("target") or payload.get("handle") or {}).get("namespace")
        self.calls.append((task, namespace))
        if self.throttle.get((task, namespace), 0) > 0:
            self.throttle[(task, namespace)] -= 1
            raise JsonRESTError("TooManyRequestsException", "Rate exceeded")
        try:
            result = dreaming_handlers.handler(payload, FakeContext())
        except Exception as error:  # the Lambda runtime reports any exception as a function error
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}).encode()
        return json.dumps(result).encode()


@pytest.fixture
def world(tmp_path, clock) -> World:
    world = World.build(tmp_path, clock)
    world.short_term(INVOICES)
    world.recall_daily(
        [
            "when are invoices generated",
            "invoice generation schedule",
            "billing cron job day",
            "first day month invoices",
        ]
    )
    world.short_term("Staging runs in eu-west-1", namespace=INFRA)
    return world


@pytest.fixture
def runtime(world, monkeypatch) -> LambdaRuntime:
    runtime = LambdaRuntime()
    monkeypatch.setattr(
        LambdaSimpleBackend,
        "invoke",
        lambda self, name, qualifier, body, headers, response_headers: runtime.invoke(
            self, name, qualifier, body, headers, response_headers
        ),
    )
    service = DreamingService(world.memory, world.store, world.files, world.clock)
    settings = DreamingSettings(tenants=[TENANT], namespaces={TENANT: [NS]})
    dreaming_handlers.configure(lambda tenant: service, settings)
    yield runtime
    dreaming_handlers.configure(None)


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=recorded.append))
    return recorded


def execute(definition: dict[str, Any], execution_input: dict[str, Any], name: str) -> dict[str, Any]:
    """Start and wait. The name is explicit: moto leaves `$$.Execution.Name` null without one (AWS and the
    scheduler always set one)."""
    with mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}):
        client = boto3.client("stepfunctions", region_name=REGION)
        machine = client.create_state_machine(
            name="agent-memory-dreaming",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/dreaming-workflow",
        )
        started = client.start_execution(
            stateMachineArn=machine["stateMachineArn"], name=name, input=json.dumps(execution_input)
        )
        deadline = time.monotonic() + 60
        while True:
            described = client.describe_execution(executionArn=started["executionArn"])
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                return described
            time.sleep(0.05)


def test_given_two_namespaces_one_locked_when_executed_then_one_promotes_and_the_other_records_its_failure(
    world, runtime, sleeps
):
    day = world.clock.now().date().isoformat()
    other = DreamingService(world.memory, world.store, world.files, world.clock)
    other.begin(TENANT, INFRA, run_id="manual-sweep")  # an on-demand sweep holds infra's lease
    runtime.throttle[("rem", NS)] = 2  # Lambda throttles the REM invoke twice
    definition = build_definition(DreamingFunctions.single(FUNCTION), max_concurrency=2, retry=RetryPolicy())

    described = execute(definition, {"tenants": [TENANT], "day": day}, "nightly-1")

    assert described["status"] == "SUCCEEDED", described
    output = json.loads(described["output"])
    results = {result["namespace"]: result for result in output["results"]}
    assert set(results) == {NS, INFRA}
    billing, infra = results[NS], results[INFRA]
    assert billing["status"] == "completed" and billing["day"] == day
    assert [p["memory_md"] for p in billing["summary"]["promoted"]] == ["added"]
    assert infra == {
        "tenant": TENANT,
        "namespace": INFRA,
        "day": day,
        "status": "failed",
        "error": "SweepInProgress",
    }
    # Data flow: Light → REM (throttled twice, retried) → Deep for billing; Light → RecordFailure for infra.
    assert [task for task, ns in runtime.calls if ns == NS] == ["light", "rem", "rem", "rem", "deep"]
    assert [task for task, ns in runtime.calls if ns == INFRA] == ["light", "record_failure"]
    assert len(sleeps) == 2 and all(0 <= pause <= 60 for pause in sleeps)
    assert world.memory_md() == [INVOICES]
    failure = json.loads(world.files.read_file(TENANT, INFRA, f".dreams/{day}/failure.json"))
    assert failure["error"] == "SweepInProgress" and "manual-sweep" in failure["cause"]
    lease = json.loads(world.files.read_file(TENANT, INFRA, ".dreams/lock.json"))
    assert lease["owner"] == "manual-sweep"  # a failed item never releases somebody else's lease
    assert f".dreams/{day}/run.json" in world.dream_files(NS)


def test_given_the_same_day_executed_twice_then_the_second_promotes_nothing(world, runtime, sleeps):
    day = world.clock.now().date().isoformat()
    definition = build_definition(DreamingFunctions.single(FUNCTION), max_concurrency=1)

    first = execute(definition, {"tenants": [TENANT], "day": day}, "nightly-1")
    second = execute(definition, {"tenants": [TENANT], "day": day}, "on-demand-2")

    assert first["status"] == second["status"] == "SUCCEEDED"
    summaries = {r["namespace"]: r["summary"] for r in json.loads(second["output"])["results"]}
    assert summaries[NS]["status"] == "already_done" and summaries[INFRA]["status"] == "already_done"
    assert world.memory_md() == [INVOICES]


def test_given_no_tenant_anywhere_when_listing_targets_then_a_clear_error(world, monkeypatch):
    monkeypatch.delenv("AGENT_MEMORY_TENANTS", raising=False)
    service = DreamingService(world.memory, world.store, world.files, world.clock)
    dreaming_handlers.configure(lambda tenant: service, DreamingSettings(tenants=[]))
    try:
        with pytest.raises(Exception, match="no tenant to sweep"):
            dreaming_handlers.handler({"task": "list_targets", "input": {}}, FakeContext())
        with pytest.raises(Exception, match="unknown dreaming task"):
            dreaming_handlers.handler({"task": "sleep"}, FakeContext())
        listed = dreaming_handlers.handler(
            {
                "task": "list_targets",
                "input": {"tenants": [TENANT], "time_zone": "Asia/Tokyo"},
                "execution": "exec-1",
            },
            FakeContext(),
        )
        assert {t["namespace"] for t in listed["targets"]} == {NS, INFRA}
        assert all(t["run_id"].startswith("sfn-exec-1-") for t in listed["targets"])
        # an on-demand start may name the namespaces to sweep
        chosen = dreaming_handlers.handler(
            {
                "task": "list_targets",
                "input": {"tenants": [TENANT], "namespaces": [INFRA]},
                "execution": "e2",
            },
            FakeContext(),
        )
        assert [t["namespace"] for t in chosen["targets"]] == [INFRA]
        with pytest.raises(Exception, match="namespaces must be a list"):
            dreaming_handlers.handler(
                {"task": "list_targets", "input": {"tenants": [TENANT], "namespaces": ["../x"]}},
                FakeContext(),
            )
        unusable = dreaming_handlers.handler(
            {"task": "record_failure", "target": {"tenant": TENANT}}, FakeContext()
        )
        assert unusable["recorded"] is False and "namespace" in unusable["reason"]  # logged, never raised
    finally:
        dreaming_handlers.configure(None)
