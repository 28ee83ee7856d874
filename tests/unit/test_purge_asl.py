"""The purge workflow's definition (workflows/purge_asl.py): one Lambda task per plan step, looped while the
plan is executing, with the shared retries, and a Fail state that keeps the plan resumable."""

from __future__ import annotations

import json

from infra.workflows._asl import LAMBDA_TRANSIENT_ERRORS, UPSTREAM_ERRORS
from infra.workflows.purge_asl import build_definition, definition_json

FUNCTION = "arn:aws:lambda:eu-central-1:123456789012:function:dreaming"


def test_the_workflow_runs_one_step_per_task_until_the_plan_is_no_longer_executing() -> None:
    definition = build_definition(FUNCTION, partition="aws", task_timeout_seconds=600)
    states = definition["States"]
    assert definition["StartAt"] == "RunStep"
    step = states["RunStep"]
    assert step["Resource"] == "arn:aws:states:::lambda:invoke" and step["TimeoutSeconds"] == 600
    assert step["Parameters"]["FunctionName"] == FUNCTION
    assert step["Parameters"]["Payload"] == {
        "task": "purge_step",
        "tenant.$": "$.tenant",
        "plan_id.$": "$.plan_id",
    }
    assert step["Next"] == "MoreSteps" and step["Catch"][0]["Next"] == "Failed"
    retried = {error for retry in step["Retry"] for error in retry["ErrorEquals"]}
    assert set(LAMBDA_TRANSIENT_ERRORS) | set(UPSTREAM_ERRORS) <= retried
    assert all(retry.get("JitterStrategy") == "FULL" for retry in step["Retry"])
    choice = states["MoreSteps"]
    assert choice["Choices"] == [{"Variable": "$.last.state", "StringEquals": "executing", "Next": "RunStep"}]
    assert choice["Default"] == "Done" and states["Done"]["Type"] == "Succeed"
    assert states["Failed"]["Type"] == "Fail" and "resumes" in states["Failed"]["Cause"]


def test_the_serialised_definition_is_json_with_the_partition() -> None:
    text = definition_json(FUNCTION, partition="aws-cn")
    assert json.loads(text)["States"]["RunStep"]["Resource"] == "arn:aws-cn:states:::lambda:invoke"
