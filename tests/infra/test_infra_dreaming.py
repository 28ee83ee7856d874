"""DreamingWorkflow: the dreaming function, its state machine, the per-tenant schedules and their alarms."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, cast
from zoneinfo import ZoneInfo

import pytest
from infra_support import (
    TEST_DREAMING,
    TEST_TENANTS,
    Synthesized,
    actions_of,
    as_list,
    policy_statements,
    render,
)

from infra.config import ConfigError, DeploymentConfig, DreamingScheduleConfig, FunctionsConfig

DREAMING_HANDLER = "agent_memory.handlers.dreaming.handler"


def _function_id(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::Lambda::Function", "DreamingFunction")


def _state_machine(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    # The dreaming state machine (the curator's is CuratorWorkflow's: tests/infra/test_infra_curator.py).
    ((logical_id, resource),) = [
        item
        for item in synthesized.of_type("AWS::StepFunctions::StateMachine").items()
        if item[0].startswith("DreamingWorkflow")
    ]
    return logical_id, resource["Properties"]


def _definition(synthesized: Synthesized) -> dict[str, Any]:
    _, props = _state_machine(synthesized)
    return cast(dict[str, Any], json.loads(render(props["DefinitionString"])))


def _tasks(states: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every Task state, including those inside Map item processors."""
    found: dict[str, dict[str, Any]] = {}
    for name, state in states.items():
        if state["Type"] == "Task":
            found[name] = state
        if state["Type"] == "Map":
            found.update(_tasks(state["ItemProcessor"]["States"]))
    return found


def _dreaming_schedules(synthesized: Synthesized) -> list[dict[str, Any]]:
    state_machine_id, _ = _state_machine(synthesized)
    return [
        s["Properties"]
        for s in synthesized.of_type("AWS::Scheduler::Schedule").values()
        if s["Properties"]["Target"]["Arn"] == {"Ref": state_machine_id}
    ]


# ---------------------------------------------------------------- state machine


def test_state_machine_sweeps_namespaces_with_the_configured_concurrency(synthesized: Synthesized) -> None:
    # Given the synthesized definition
    definition = _definition(synthesized)
    states = definition["States"]

    # Then it lists a page of targets, then maps over them with the concurrency from config (7, not the
    # default), each namespace a child execution, and lists the next page until there is none
    assert definition["StartAt"] == "Begin" and states["Begin"]["Next"] == "ListTargets"
    assert states["ListTargets"]["Next"] == "SweepNamespaces"
    sweep = states["SweepNamespaces"]
    assert sweep["Type"] == "Map"
    assert sweep["ItemsPath"] == "$.listed.targets"
    assert sweep["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert states["MorePages"]["Choices"][0]["Next"] == "ListTargets"
    assert sweep["MaxConcurrency"] == TEST_DREAMING["max_concurrency"]
    # And each namespace runs Light -> REM -> Deep
    items = sweep["ItemProcessor"]["States"]
    assert sweep["ItemProcessor"]["StartAt"] == "Light"
    assert (items["Light"]["Next"], items["Rem"]["Next"], items["Deep"]["Next"]) == (
        "Rem",
        "Deep",
        "ItemDone",
    )


def test_every_task_invokes_the_dreaming_function_and_retries_with_backoff_and_full_jitter(
    synthesized: Synthesized,
) -> None:
    # Given every task state of the definition
    tasks = _tasks(_definition(synthesized)["States"])
    function_arn = f"<{_function_id(synthesized)}.Arn>"
    timeout = DeploymentConfig().functions.dreaming.timeout_seconds

    # Then all five tasks invoke the one dreaming function, dispatching on `task`
    assert set(tasks) == {"ListTargets", "Light", "Rem", "Deep", "RecordFailure"}
    for name, task in tasks.items():
        # the stack's own partition (aws, aws-cn, ...), never a literal `arn:aws:`
        assert task["Resource"] == "arn:<AWS::Partition>:states:::lambda:invoke", name
        assert task["Parameters"]["FunctionName"] == function_arn, name
        assert task["TimeoutSeconds"] == timeout, name
        # And Lambda throttling is retried with exponential backoff and FULL jitter
        retriers = task["Retry"]
        throttling = [r for r in retriers if "Lambda.TooManyRequestsException" in r["ErrorEquals"]]
        assert throttling, name
        for retrier in retriers:
            assert retrier["JitterStrategy"] == "FULL", name
            assert retrier["BackoffRate"] > 1, name
            assert retrier["MaxAttempts"] >= 1, name
    assert {t["Parameters"]["Payload"]["task"] for t in tasks.values()} == {
        "list_targets",
        "light",
        "rem",
        "deep",
        "record_failure",
    }


def test_a_failing_phase_is_caught_and_recorded_without_failing_the_other_namespaces(
    synthesized: Synthesized,
) -> None:
    # Given the per-namespace states of the Map
    items = _definition(synthesized)["States"]["SweepNamespaces"]["ItemProcessor"]["States"]

    # Then every phase catches any error into RecordFailure, keeping the input for it
    for phase in ("Light", "Rem", "Deep"):
        (catch,) = items[phase]["Catch"]
        assert catch["ErrorEquals"] == ["States.ALL"], phase
        assert catch["Next"] == "RecordFailure", phase
        assert catch["ResultPath"] == "$.error", phase
    # And even a failure to record ends the item as failed instead of failing the Map
    assert items["RecordFailure"]["Next"] == "ItemFailed"
    assert items["RecordFailure"]["Catch"][0]["Next"] == "ItemFailed"
    assert items["ItemFailed"]["Type"] == "Pass" and items["ItemFailed"]["End"] is True
    assert items["ItemFailed"]["Result"] == {"failed": 1}


def test_state_machine_is_standard_traced_and_logs_no_execution_data(synthesized: Synthesized) -> None:
    _, props = _state_machine(synthesized)
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    # Memory content flows through the state: never into the logs
    assert logging["IncludeExecutionData"] is False
    assert logging["Level"] in ("ALL", "ERROR")
    (destination,) = logging["Destinations"]
    log_group = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    assert synthesized.resources[log_group]["Type"] == "AWS::Logs::LogGroup"
    assert (
        synthesized.resources[log_group]["Properties"]["RetentionInDays"]
        == DeploymentConfig().retention.log_days
    )


def test_state_machine_role_may_invoke_only_the_dreaming_function(synthesized: Synthesized) -> None:
    # Given the state machine's role and its policy statements
    _, props = _state_machine(synthesized)
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    statements = policy_statements(synthesized, role_id)
    function_arn = f"<{_function_id(synthesized)}.Arn>"

    # Then the only Lambda permission is InvokeFunction on the dreaming function and its versions
    lambda_statements = [s for s in statements if any(a.startswith("lambda:") for a in as_list(s["Action"]))]
    assert [as_list(s["Action"]) for s in lambda_statements] == [["lambda:InvokeFunction"]]
    assert sorted(as_list(lambda_statements[0]["Resource"])) == [function_arn, f"{function_arn}:*"]
    # And its Distributed Map may start this state machine (the child executions) and watch their executions
    sm_id, _ = _state_machine(synthesized)
    states_statements = [s for s in statements if any(a.startswith("states:") for a in as_list(s["Action"]))]
    assert {(tuple(as_list(s["Action"])), str(s["Resource"])) for s in states_statements} == {
        (("states:StartExecution",), f"<{sm_id}>"),
        (
            ("states:DescribeExecution", "states:StopExecution"),
            f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<{sm_id}.Name>/*",
        ),
    }
    # And everything else is log delivery and tracing (no data access, no other service)
    others = {a for a in actions_of(statements) if not a.startswith(("lambda:", "states:"))}
    assert others and all(a.startswith(("logs:", "xray:")) for a in others), others


# ---------------------------------------------------------------- function


def test_dreaming_function_mounts_the_memory_files_and_gets_its_tenants(synthesized: Synthesized) -> None:
    from agent_memory.settings.dreaming import DreamingSettings

    # Given the dreaming function
    props = synthesized.resources[_function_id(synthesized)]["Properties"]
    sizing = DeploymentConfig().functions.dreaming
    environment = props["Environment"]["Variables"]

    # Then it runs the task dispatcher with its configured size, invoked synchronously (no DLQ)
    assert props["Handler"] == DREAMING_HANDLER
    assert (props["MemorySize"], props["Timeout"]) == (sizing.memory_mb, sizing.timeout_seconds)
    assert "DeadLetterConfig" not in props
    function_id = _function_id(synthesized)
    assert not [
        c
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    # And (default `lean` profile) it reaches the memory files through the file function: no mount, no VPC
    assert "FileSystemConfigs" not in props and "VpcConfig" not in props
    file_function = synthesized.logical_id("AWS::Lambda::Function", "FileFunction")
    assert environment["AGENT_MEMORY_FILE_FUNCTION"] == {"Ref": file_function}
    # And its fallback tenant list is every configured tenant, in the form the handler's settings parse
    settings = DreamingSettings.model_validate(
        {"tenants": json.loads(environment["AGENT_MEMORY_DREAMING_TENANTS"])}
    )
    assert settings.tenants == [t["id"] for t in TEST_TENANTS]


def test_dreaming_function_embeds_and_uses_the_key_with_its_own_role(synthesized: Synthesized) -> None:
    props = synthesized.resources[_function_id(synthesized)]["Properties"]
    statements = policy_statements(synthesized, props["Role"]["Fn::GetAtt"][0])
    (embedding,) = [s for s in statements if s.get("Sid") == "EmbeddingModel"]
    assert embedding["Action"] == "bedrock:InvokeModel"
    assert embedding["Resource"].endswith("::foundation-model/amazon.titan-embed-text-v2:0")
    key_id = synthesized.logical_id("AWS::KMS::Key", "DataKey")
    (key_use,) = [s for s in statements if s["Resource"] == f"<{key_id}.Arn>"]
    assert {"kms:Decrypt", "kms:GenerateDataKey"} <= set(as_list(key_use["Action"]))
    # Bedrock beyond the embedding model: only the configured extraction model, for InvokeModel
    bedrock = [s for s in statements if any(a.startswith("bedrock:") for a in as_list(s["Action"]))]
    assert sorted(s["Sid"] for s in bedrock) == ["DreamingExtractionModels", "EmbeddingModel"]


# ---------------------------------------------------------------- schedules


def test_one_schedule_per_tenant_at_three_in_the_tenants_time_zone(synthesized: Synthesized) -> None:
    # Given the schedules that start the state machine
    schedules = _dreaming_schedules(synthesized)
    (group_id,) = synthesized.of_type("AWS::Scheduler::ScheduleGroup")
    group_name = synthesized.resources[group_id]["Properties"]["Name"]

    # Then each configured tenant has exactly one, at 03:00 in its own time zone
    by_tenant = {json.loads(s["Target"]["Input"])["tenants"][0]: s for s in schedules}
    assert len(schedules) == len(TEST_TENANTS)
    assert set(by_tenant) == {t["id"] for t in TEST_TENANTS}
    for tenant in TEST_TENANTS:
        schedule = by_tenant[tenant["id"]]
        assert schedule["ScheduleExpression"] == "cron(0 3 * * ? *)"
        assert schedule["ScheduleExpressionTimezone"] == tenant["time_zone"]
        assert schedule["State"] == "ENABLED"
        assert schedule["GroupName"] == group_name
        # And the input names that tenant alone and the time zone that decides the sweep day
        assert json.loads(schedule["Target"]["Input"]) == {
            "tenants": [tenant["id"]],
            "time_zone": tenant["time_zone"],
        }
    assert {s["ScheduleExpressionTimezone"] for s in schedules} == {"UTC", "Europe/Berlin"}
    for logical_id, resource in synthesized.of_type("AWS::Scheduler::Schedule").items():
        assert group_id in resource["DependsOn"], logical_id


def test_schedule_input_is_what_the_list_targets_task_reads(synthesized: Synthesized) -> None:
    from agent_memory.handlers import dreaming
    from agent_memory.settings.dreaming import DreamingSettings

    # Given the handler wired to a service that knows one namespace per tenant
    class OneNamespace:
        def namespaces(self, tenant: str, configured: Any) -> list[str]:
            return [f"/projects/{tenant}"]

    dreaming.configure(lambda tenant: cast(Any, OneNamespace()), DreamingSettings())
    try:
        for schedule in _dreaming_schedules(synthesized):
            execution_input = json.loads(schedule["Target"]["Input"])
            zone = ZoneInfo(schedule["ScheduleExpressionTimezone"])
            # When ListTargets runs on the execution input the schedule sends (as the ASL passes it)
            before = datetime.now(zone).date().isoformat()
            result = dreaming.list_targets_task({"input": execution_input, "execution": "exec-1"})
            after = datetime.now(zone).date().isoformat()
            # Then it sweeps exactly that tenant, for today in the tenant's time zone
            (tenant,) = execution_input["tenants"]
            assert [t["tenant"] for t in result["targets"]] == [tenant]
            assert result["day"] in (before, after)
    finally:
        dreaming.configure(None)


def test_schedules_retry_then_dead_letter_with_a_role_that_only_starts_the_sweep(
    synthesized: Synthesized,
) -> None:
    # Given the dreaming schedules and their shared dead-letter queue
    schedules = _dreaming_schedules(synthesized)
    state_machine_id, _ = _state_machine(synthesized)
    (queue_id,) = {s["Target"]["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0] for s in schedules}
    queue = synthesized.resources[queue_id]

    # Then each retries 3 times for up to 2 hours, then lands in an encrypted, TLS-only queue
    for schedule in schedules:
        assert schedule["Target"]["RetryPolicy"] == {
            "MaximumRetryAttempts": 3,
            "MaximumEventAgeInSeconds": 7200,
        }
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    queue_policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.of_type("AWS::SQS::QueuePolicy").values()
        if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in queue_policies
        for s in statements
    )
    # And the schedules' role may start this state machine and write to the queue, nothing else
    (role_id,) = {s["Target"]["RoleArn"]["Fn::GetAtt"][0] for s in schedules}
    statements = policy_statements(synthesized, role_id)
    assert sorted((as_list(s["Action"]), s["Resource"]) for s in statements) == [
        (["sqs:SendMessage"], f"<{queue_id}.Arn>"),
        (["states:StartExecution"], f"<{state_machine_id}>"),
    ]
    trust = render(synthesized.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"])
    assert trust[0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust[0]["Condition"] == {"StringEquals": {"aws:SourceAccount": "<AWS::AccountId>"}}


# ---------------------------------------------------------------- observability and outputs


def _alarms_by_metric(synthesized: Synthesized, metric_name: str) -> list[dict[str, Any]]:
    return [
        a["Properties"]
        for a in synthesized.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == metric_name
    ]


def test_failed_executions_dead_letters_and_function_errors_alarm_the_topic(synthesized: Synthesized) -> None:
    state_machine_id, _ = _state_machine(synthesized)
    ((topic_id, _),) = synthesized.of_type("AWS::SNS::Topic").items()
    queue_id = _dreaming_schedules(synthesized)[0]["Target"]["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]

    # Then a failed execution alarms
    (failed,) = [  # the embedding backfill's state machine has its own (tests/infra: MigrationWorkflow)
        a
        for a in _alarms_by_metric(synthesized, "ExecutionsFailed")
        if a["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": state_machine_id}}]
    ]
    assert failed["Namespace"] == "AWS/States"
    assert failed["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": state_machine_id}}]
    assert (failed["Threshold"], failed["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    # And a message in the schedules' dead-letter queue alarms
    (dead_letters,) = [
        a
        for a in _alarms_by_metric(synthesized, "ApproximateNumberOfMessagesVisible")
        if a["Dimensions"][0]["Value"] == {"Fn::GetAtt": [queue_id, "QueueName"]}
    ]
    assert (dead_letters["Threshold"], dead_letters["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    # And a namespace failure (caught inside the Map, so the execution succeeds) alarms too
    (namespace_failures,) = _alarms_by_metric(synthesized, "DreamFailures")
    assert namespace_failures["Namespace"] == "AgentMemory"
    assert namespace_failures["Dimensions"] == [{"Name": "service", "Value": "dreaming"}]
    # And the function's own errors and throttles alarm like every other function's
    function_id = _function_id(synthesized)
    for metric in ("Errors", "Throttles"):
        assert [
            a
            for a in _alarms_by_metric(synthesized, metric)
            if a["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
        ], metric
    for alarm in (failed, dead_letters, namespace_failures):
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]


def test_dashboard_shows_the_sweeps_metrics_as_the_handler_emits_them(synthesized: Synthesized) -> None:
    (dashboard,) = synthesized.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.loads(render(dashboard["Properties"]["DashboardBody"]))
    metrics = [
        metric
        for widget in body["widgets"]
        if widget["type"] == "metric"
        for metric in widget["properties"].get("metrics", [])
    ]
    # Powertools writes [namespace, name, "service", <Metrics(service=...)>]
    for name in ("DreamPromotions", "DreamCandidates", "DreamFailures"):
        assert any(m[:4] == ["AgentMemory", name, "service", "dreaming"] for m in metrics), name
    assert any(m[:2] == ["AWS/States", "ExecutionsFailed"] for m in metrics)


def test_state_machine_arn_is_an_output(synthesized: Synthesized) -> None:
    state_machine_id, _ = _state_machine(synthesized)
    output = synthesized.template["Outputs"]["DreamingStateMachineArn"]
    assert output["Value"] == {"Ref": state_machine_id}


# ---------------------------------------------------------------- config


def test_dreaming_defaults_run_at_three_with_four_namespaces_in_parallel() -> None:
    config = DeploymentConfig()
    assert config.schedules.dreaming == DreamingScheduleConfig(
        expression="cron(0 3 * * ? *)", enabled=True, max_concurrency=4
    )
    assert (config.functions.dreaming.memory_mb, config.functions.dreaming.timeout_seconds) == (2048, 900)
    assert FunctionsConfig().dreaming == config.functions.dreaming


@pytest.mark.parametrize(
    ("dreaming", "expected"),
    [
        (
            {"max_concurrency": 0},
            "schedules.dreaming.max_concurrency: Input should be greater than or equal to 1",
        ),
        (
            {"max_concurrency": 41},
            "schedules.dreaming.max_concurrency: Input should be less than or equal to 40",
        ),
        ({"expression": "cron(0 3 * * *)"}, "schedules.dreaming.expression: 'cron(0 3 * * *)' is not"),
        ({"time_zone": "Europe/Berlin"}, "each tenant's own time zone (tenants[].time_zone)"),
    ],
)
def test_bad_dreaming_settings_are_refused_with_the_key_and_the_fix(
    dreaming: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        DeploymentConfig.from_context({"schedules": {"dreaming": dreaming}})
    assert expected in str(caught.value)


def test_the_llm_extraction_model_is_configured_and_the_only_model_the_sweep_may_call(
    synthesized: Synthesized,
) -> None:
    from infra_support import TEST_DREAMING_MODEL

    function_id = synthesized.logical_id("AWS::Lambda::Function", "DreamingFunction")
    environment = synthesized.resources[function_id]["Properties"]["Environment"]["Variables"]
    assert environment["AGENT_MEMORY_DREAMING_MODEL_ID"] == TEST_DREAMING_MODEL
    statements = [
        statement
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Sid") == "DreamingExtractionModels"
    ]
    assert len(statements) == 1
    resources = json.dumps(statements[0]["Resource"])
    assert f"inference-profile/{TEST_DREAMING_MODEL}" in resources
    assert "foundation-model/" + TEST_DREAMING_MODEL.split(".", 1)[1] in resources
    assert statements[0]["Action"] == "bedrock:InvokeModel"


def test_the_lambda_integration_follows_the_stacks_partition(synthesized: Synthesized) -> None:
    # Given the environment-agnostic template: every task resolves the partition at deploy time
    _, props = _state_machine(synthesized)
    raw = json.dumps(props["DefinitionString"])
    assert "arn:aws:states" not in raw and "AWS::Partition" in raw

    # When the stack is pinned to a China region (cdk.json allows the aws-cn partition)
    import aws_cdk as cdk
    from aws_cdk.assertions import Template
    from infra_support import ROOT

    from app import build_app
    from infra.config import CONTEXT_KEY, load_cdk_json_context

    context = load_cdk_json_context(ROOT / "cdk.json")
    context[CONTEXT_KEY] = {
        **context[CONTEXT_KEY],
        "account": "123456789012",
        "region": "cn-north-1",
        "chat_model_ids": [],  # Bedrock's cross-region profiles do not serve the China regions
    }
    # CDK's region check would stop synth: S3 Files is not offered in the China regions (yet). Only the
    # partition the template is rendered for matters here.
    context["@aws-cdk/core:validateAgainstDefaultRules"] = False
    app = cdk.App(context={**context, "aws:cdk:bundling-stacks": []})
    build_app(app, nag=False)
    (stack,) = [c for c in app.node.children if isinstance(c, cdk.Stack)]
    assert stack.partition == "aws-cn"
    machines = Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine").values()
    assert len(machines) == 4  # dreaming, the skills curator, the embedding backfill and the purge

    # Then their tasks use the aws-cn integration ARN, and nothing names the commercial partition's
    for machine in machines:
        definition = json.loads(render(machine["Properties"]["DefinitionString"]))
        tasks = _tasks(definition["States"])
        assert {task["Resource"] for task in tasks.values()} == {"arn:aws-cn:states:::lambda:invoke"}
        assert "arn:aws:" not in json.dumps(definition)


def test_the_map_keeps_only_counts_so_the_execution_state_stays_small(synthesized: Synthesized) -> None:
    # Given the synthesized definition (tests/aws/test_dreaming_stepfunctions.py runs it at the namespace cap)
    states = _definition(synthesized)["States"]
    sweep = states["SweepNamespaces"]
    # Then each namespace leaves a count, and the counts replace the target list instead of joining it
    items = sweep["ItemProcessor"]["States"]
    assert items["ItemDone"]["Result"] == {"completed": 1} and items["ItemFailed"]["Result"] == {"failed": 1}
    assert sweep["ResultSelector"] == {"completed.$": "$[*].completed", "failed.$": "$[*].failed"}
    assert sweep["ResultPath"] == "$.listed.targets"
    assert sweep["Next"] == "Tally" and states["Tally"]["Next"] == "MorePages"
    assert states["MorePages"]["Default"] == "Summarize" and states["Summarize"]["Next"] == "Done"
