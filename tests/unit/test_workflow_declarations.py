"""One declaration per workflow (agent_memory.settings.workflows): the generic launchers (Step Functions in
AWS, a job of the job worker locally), the dreaming function's task table and the CDK app's deployments are
all derived from it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.adapters.aws.stepfunctions import StepFunctionsLauncher
from agent_memory.api.jobs import JobLauncher
from agent_memory.domain.errors import UpstreamUnavailable
from agent_memory.settings.service import Settings
from agent_memory.settings.workflows import CURATOR, DREAMING, MIGRATION, PURGE, WORKFLOWS

ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:x"
PLAN = "purge_" + "a" * 32


class Client:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._error = error

    def start_execution(self, **call: Any) -> dict[str, str]:
        if self._error is not None:
            raise self._error
        self.calls.append(call)
        return {"executionArn": f"{ARN}:{call['name']}"}


def test_one_launcher_class_starts_each_workflow_with_its_own_input_and_name() -> None:
    client = Client()
    dream = StepFunctionsLauncher(client, ARN, DREAMING.start_input, DREAMING.execution_name)
    purge = StepFunctionsLauncher(client, ARN, PURGE.start_input, PURGE.execution_name)
    backfill = StepFunctionsLauncher(client, ARN, MIGRATION.start_input, MIGRATION.execution_name)

    assert dream.start("acme", ["/a"]).startswith(f"{ARN}:ondemand-acme-")
    dream.start("acme", [])
    assert purge.start("acme", PLAN) == f"{ARN}:{PLAN}"  # named after the plan: a second start finds it
    backfill.start("acme", "mig_1")

    inputs = [json.loads(call["input"]) for call in client.calls]
    assert inputs == [
        {"tenants": ["acme"], "namespaces": ["/a"]},
        {"tenants": ["acme"]},  # no namespaces named: the sweep takes every namespace of the tenant
        {"tenant": "acme", "plan_id": PLAN},
        {"tenant": "acme", "migration_id": "mig_1"},
    ]
    names = [call["name"] for call in client.calls]
    assert names[0] != names[1] and names[3].startswith("backfill-acme-")
    assert all(
        len(name) <= 80 and call["stateMachineArn"] == ARN
        for name, call in zip(names, client.calls, strict=True)
    )
    assert len(DREAMING.execution_name("t" * 100, [])) == 80


def test_a_refused_start_is_an_upstream_error() -> None:
    from botocore.exceptions import ClientError

    refused = ClientError(
        {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "StartExecution"
    )
    launcher = StepFunctionsLauncher(Client(refused), ARN, PURGE.start_input, PURGE.execution_name)
    with pytest.raises(UpstreamUnavailable):
        launcher.start("acme", PLAN)


class Jobs:
    def __init__(self) -> None:
        self.submitted: list[tuple[Any, ...]] = []

    def submit(self, tenant: str, key_id: str, kind: str, namespaces: list[str], order: str) -> Any:
        self.submitted.append((tenant, key_id, kind, namespaces, json.loads(order)))

        class Job:
            id = f"job{len(self.submitted)}"

        return Job()


def test_one_local_launcher_queues_each_workflow_as_a_job_of_its_kind() -> None:
    jobs = Jobs()
    assert JobLauncher(jobs, DREAMING).start("acme", ["/a"]) == "job1"  # type: ignore[arg-type]
    assert JobLauncher(jobs, PURGE).start("acme", PLAN) == "job2"  # type: ignore[arg-type]
    (dream, purge) = jobs.submitted
    assert dream[:4] == ("acme", "system-dream", "dream", ["/a"])
    assert dream[4]["request"] == {"tenants": ["acme"], "namespaces": ["/a"]}
    assert purge[:4] == ("acme", "system-purge", "purge", [])
    assert purge[4]["request"] == {"tenant": "acme", "plan_id": PLAN}
    with pytest.raises(ValueError, match="does not run as a job"):
        JobLauncher(jobs, MIGRATION)  # type: ignore[arg-type]


def test_every_started_workflow_names_a_settings_field_and_every_job_kind_has_work() -> None:
    from agent_memory.api import jobs

    for workflow in WORKFLOWS:
        if workflow.arn_setting is not None:
            assert workflow.arn_setting in Settings.model_fields, workflow
            assert workflow.arn_variable == f"AGENT_MEMORY_{workflow.arn_setting.upper()}"
    assert DREAMING.arn_variable == "AGENT_MEMORY_DREAMING_STATE_MACHINE_ARN"
    with pytest.raises(ValueError, match="schedules only"):
        _ = CURATOR.arn_variable
    kinds = {w.job_kind for w in WORKFLOWS if w.job_kind is not None}
    assert kinds == {"dream", "purge"}
    import inspect

    source = inspect.getsource(jobs.run_job)
    assert all(f'"{kind}"' in source for kind in kinds)
