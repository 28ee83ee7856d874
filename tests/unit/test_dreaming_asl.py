"""The dreaming state machine definition: structure, retries with backoff and jitter, bounded concurrency, and
a catch per namespace that records the failure without failing the others."""

from __future__ import annotations

import json

import pytest

from infra.workflows.dreaming_asl import (
    DreamingFunctions,
    RetryPolicy,
    build_definition,
    definition_json,
    lambda_invoke_arn,
)

ARNS = DreamingFunctions(
    list_targets="arn:aws:lambda:eu-west-1:123456789012:function:dream-list",
    light="arn:aws:lambda:eu-west-1:123456789012:function:dream-light",
    rem="arn:aws:lambda:eu-west-1:123456789012:function:dream-rem",
    deep="arn:aws:lambda:eu-west-1:123456789012:function:dream-deep",
    record_failure="arn:aws:lambda:eu-west-1:123456789012:function:dream-failure",
)


@pytest.fixture
def definition() -> dict:
    return build_definition(ARNS, partition="aws", max_concurrency=7)


def tasks(definition: dict) -> dict[str, dict]:
    found = {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}
    item = definition["States"]["SweepNamespaces"]["ItemProcessor"]["States"]
    found.update({name: state for name, state in item.items() if state["Type"] == "Task"})
    return found


def test_given_functions_when_built_then_list_targets_then_a_bounded_map_of_light_rem_deep(definition):
    assert definition["StartAt"] == "Begin"
    assert definition["States"]["Begin"]["Next"] == "ListTargets"
    assert definition["States"]["ListTargets"]["Next"] == "SweepNamespaces"
    sweep = definition["States"]["SweepNamespaces"]
    assert sweep["Type"] == "Map" and sweep["ItemsPath"] == "$.listed.targets"
    assert sweep["MaxConcurrency"] == 7
    # Each namespace is a child execution (a Distributed Map): the parent's history grows per page only
    assert sweep["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    item = sweep["ItemProcessor"]
    assert item["StartAt"] == "Light"
    assert [item["States"][s]["Next"] for s in ("Light", "Rem", "Deep")] == ["Rem", "Deep", "ItemDone"]
    functions = {name: state["Parameters"]["FunctionName"] for name, state in tasks(definition).items()}
    assert functions == {
        "ListTargets": ARNS.list_targets,
        "Light": ARNS.light,
        "Rem": ARNS.rem,
        "Deep": ARNS.deep,
        "RecordFailure": ARNS.record_failure,
    }
    assert all(state["Resource"] == "arn:aws:states:::lambda:invoke" for state in tasks(definition).values())


def test_given_every_task_then_lambda_throttling_is_retried_with_exponential_backoff_and_full_jitter(
    definition,
):
    for name, state in tasks(definition).items():
        throttling, upstream = state["Retry"]
        assert "Lambda.TooManyRequestsException" in throttling["ErrorEquals"], name
        assert "Lambda.ServiceException" in throttling["ErrorEquals"], name
        assert throttling["BackoffRate"] == 2.0 and throttling["JitterStrategy"] == "FULL"
        assert throttling["MaxAttempts"] == 6 and throttling["MaxDelaySeconds"] == 60
        assert upstream["ErrorEquals"] == ["UpstreamUnavailable"] and upstream["JitterStrategy"] == "FULL"
        assert "SweepInProgress" not in throttling["ErrorEquals"] + upstream["ErrorEquals"]


def test_given_a_failing_namespace_then_its_phase_is_caught_and_recorded_without_failing_the_map(definition):
    item = definition["States"]["SweepNamespaces"]["ItemProcessor"]["States"]
    for phase in ("Light", "Rem", "Deep"):
        (catch,) = item[phase]["Catch"]
        assert catch == {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordFailure"}
        assert item[phase]["ResultPath"] not in ("$", None)  # the target survives for RecordFailure
    assert item["RecordFailure"]["Next"] == "ItemFailed"
    assert item["RecordFailure"]["Catch"][0]["Next"] == "ItemFailed"
    assert item["ItemFailed"]["End"] is True and item["ItemFailed"]["Result"] == {"failed": 1}


def test_given_the_state_between_tasks_then_only_small_handles_are_passed(definition):
    item = definition["States"]["SweepNamespaces"]["ItemProcessor"]["States"]
    assert item["Rem"]["Parameters"]["Payload"] == {"task": "rem", "handle.$": "$.sweep.handle"}
    assert item["Deep"]["Parameters"]["Payload"] == {"task": "deep", "handle.$": "$.sweep.handle"}
    assert definition["States"]["ListTargets"]["Parameters"]["Payload"]["execution.$"] == "$$.Execution.Name"


def test_given_one_function_and_options_when_serialised_then_valid_json_with_them():
    text = definition_json(
        DreamingFunctions.single("dreaming"),
        partition="aws",
        max_concurrency=2,
        retry=RetryPolicy(max_attempts=3),
    )
    parsed = json.loads(text)
    assert parsed["States"]["SweepNamespaces"]["MaxConcurrency"] == 2
    assert parsed["States"]["ListTargets"]["Retry"][0]["MaxAttempts"] == 3
    with pytest.raises(ValueError, match="max_concurrency"):
        build_definition(ARNS, partition="aws", max_concurrency=0)
    with pytest.raises(ValueError, match="backoff_rate"):
        RetryPolicy(backoff_rate=0.5)


@pytest.mark.parametrize("partition", ["aws-cn", "aws-us-gov", "${Token[AWS.Partition.9]}"])
def test_given_a_partition_then_every_task_invokes_lambda_through_that_partitions_integration(partition):
    # Given the definition for a stack in another partition (or the stack's own partition token)
    definition = build_definition(ARNS, partition=partition)
    # Then no task names the commercial partition's integration
    assert {state["Resource"] for state in tasks(definition).values()} == {
        f"arn:{partition}:states:::lambda:invoke"
    }
    assert lambda_invoke_arn(partition) == f"arn:{partition}:states:::lambda:invoke"
    # And a caller must say which partition: there is no silent `aws` default
    with pytest.raises(TypeError, match="partition"):
        build_definition(ARNS)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="partition"):
        build_definition(ARNS, partition="")


def test_given_the_map_then_each_namespace_leaves_one_count_and_the_output_is_a_summary(definition):
    sweep = definition["States"]["SweepNamespaces"]
    item = sweep["ItemProcessor"]["States"]
    # Each item ends with a one-key count instead of the sweep's summary
    assert item["ItemDone"] == {"Type": "Pass", "Result": {"completed": 1}, "End": True}
    assert item["ItemFailed"] == {"Type": "Pass", "Result": {"failed": 1}, "End": True}
    # The Map keeps the counts only (never the sweeps' output), in place of the page's targets, and Tally adds
    # them to the running totals
    assert sweep["ResultSelector"] == {"completed.$": "$[*].completed", "failed.$": "$[*].failed"}
    assert sweep["ResultPath"] == "$.listed.targets" and sweep["Next"] == "Tally"
    tally = definition["States"]["Tally"]["Parameters"]
    assert (
        tally["completed.$"] == "States.MathAdd($.completed, States.ArrayLength($.listed.targets.completed))"
    )
    assert tally["failed.$"] == "States.MathAdd($.failed, States.ArrayLength($.listed.targets.failed))"
    # The next page replaces the listed one (the state does not grow with the pages), with the first page's day
    assert (tally["cursor.$"], tally["day.$"]) == ("$.listed.next_cursor", "$.listed.day")
    assert set(tally) == {"input.$", "cursor.$", "day.$", "completed.$", "failed.$"}
    more = definition["States"]["MorePages"]
    assert more["Choices"] == [{"Variable": "$.cursor", "IsNull": False, "Next": "ListTargets"}]
    assert more["Default"] == "Summarize"
    # And the execution's output is the day and two numbers
    summarize = definition["States"]["Summarize"]
    assert summarize["Parameters"] == {"day.$": "$.day", "completed.$": "$.completed", "failed.$": "$.failed"}
    assert summarize["Next"] == "Done" and definition["States"]["Done"] == {"Type": "Succeed"}
