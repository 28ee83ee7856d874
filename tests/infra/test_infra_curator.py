"""CuratorWorkflow: the skills curator's state machine on the dreaming function, its weekly per-tenant
schedules, and the minimal grants between them."""

from __future__ import annotations

import json
from typing import Any, cast

from infra_support import TEST_TENANTS, Synthesized, as_list, policy_statements, render


def _machines(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return synthesized.of_type("AWS::StepFunctions::StateMachine")


def _curator(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = [
        item for item in _machines(synthesized).items() if item[0].startswith("CuratorWorkflow")
    ]
    return logical_id, resource["Properties"]


def _schedules(synthesized: Synthesized, machine_id: str) -> list[dict[str, Any]]:
    return [
        s["Properties"]
        for s in synthesized.of_type("AWS::Scheduler::Schedule").values()
        if s["Properties"]["Target"]["Arn"] == {"Ref": machine_id}
    ]


def test_the_curator_state_machine_runs_curate_per_namespace_on_the_dreaming_function(
    synthesized: Synthesized,
) -> None:
    machine_id, props = _curator(synthesized)
    definition = cast(dict[str, Any], json.loads(render(props["DefinitionString"])))
    dreaming_fn = synthesized.logical_id("AWS::Lambda::Function", "DreamingFunction")
    states = definition["States"]
    assert definition["StartAt"] == "Begin" and states["Begin"]["Next"] == "ListTargets"
    assert states["ListTargets"]["Parameters"]["Payload"]["task"] == "curator_targets"
    # each namespace a child execution of a Distributed Map, page after page (issue 30, defect 3)
    processor = states["CurateNamespaces"]["ItemProcessor"]["ProcessorConfig"]
    assert processor == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    curate = states["CurateNamespaces"]["ItemProcessor"]["States"]["Curate"]
    assert curate["Parameters"]["Payload"]["task"] == "curate"
    for task in (states["ListTargets"], curate):
        assert task["Parameters"]["FunctionName"] == f"<{dreaming_fn}.Arn>"
        assert any(r["JitterStrategy"] == "FULL" for r in task["Retry"])
    # a failed namespace ends its item as a count, the others go on
    assert curate["Catch"][0]["Next"] == "ItemFailed"
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is False
    # and its role may invoke the dreaming function only (plus log delivery and X-Ray)
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    invokes = [
        s for s in policy_statements(synthesized, role_id) if "lambda:InvokeFunction" in as_list(s["Action"])
    ]
    resources = {r for s in invokes for r in as_list(s["Resource"])}
    assert resources == {f"<{dreaming_fn}.Arn>", f"<{dreaming_fn}.Arn>:*"}
    assert machine_id


def test_one_weekly_schedule_per_tenant_whose_role_only_starts_the_curator(synthesized: Synthesized) -> None:
    machine_id, _ = _curator(synthesized)
    schedules = _schedules(synthesized, machine_id)
    by_tenant = {json.loads(s["Target"]["Input"])["tenants"][0]: s for s in schedules}
    assert set(by_tenant) == {t["id"] for t in TEST_TENANTS} and len(schedules) == len(TEST_TENANTS)
    for tenant in TEST_TENANTS:
        schedule = by_tenant[tenant["id"]]
        assert schedule["ScheduleExpression"] == "cron(0 4 ? * SUN *)"
        assert schedule["ScheduleExpressionTimezone"] == tenant["time_zone"]
        assert json.loads(schedule["Target"]["Input"]) == {"tenants": [tenant["id"]]}
    (role_id,) = {s["Target"]["RoleArn"]["Fn::GetAtt"][0] for s in schedules}
    (queue_id,) = {s["Target"]["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0] for s in schedules}
    statements = policy_statements(synthesized, role_id)
    assert sorted((as_list(s["Action"]), s["Resource"]) for s in statements) == [
        (["sqs:SendMessage"], f"<{queue_id}.Arn>"),
        (["states:StartExecution"], f"<{machine_id}>"),
    ]


def test_the_schedule_input_is_what_the_curator_targets_task_reads(synthesized: Synthesized) -> None:
    from agent_memory.handlers import curator, dreaming

    class OneNamespace:
        def namespaces(self, tenant: str) -> list[str]:
            return [f"/projects/{tenant}"]

    machine_id, _ = _curator(synthesized)
    curator.configure(cast(Any, OneNamespace()))
    try:
        for schedule in _schedules(synthesized, machine_id):
            execution_input = json.loads(schedule["Target"]["Input"])
            # the dreaming function's dispatcher runs the curator's task
            result = dreaming.TASKS["curator_targets"]({"task": "curator_targets", "input": execution_input})
            (tenant,) = execution_input["tenants"]
            assert result == {
                "targets": [{"tenant": tenant, "namespace": f"/projects/{tenant}"}],
                "next_cursor": None,
                "day": None,
            }
    finally:
        curator.configure(None)
