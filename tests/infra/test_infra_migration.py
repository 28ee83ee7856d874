"""The embedding migration's infrastructure (infra/constructs/migration_workflow.py, issue 12): the backfill
state machine is the one `workflows/migration_asl.py` builds, the API function may start it and nothing else
may; the tenant role reaches a migration's second index only under its own tenant's name, and the archive
only under its own prefix; the archive moves exported vectors to Glacier Instant Retrieval (a purge can still read them); failures and dead letters alarm."""

from __future__ import annotations

import json
from typing import Any

from infra_support import Synthesized, as_list, policy_statements, render

from infra.workflows.migration_asl import build_definition


def _state_machine(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    logical_id = synthesized.logical_id("AWS::StepFunctions::StateMachine", "MigrationWorkflow")
    return logical_id, synthesized.resources[logical_id]["Properties"]


def _function(synthesized: Synthesized, fragment: str) -> dict[str, Any]:
    return synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", fragment)]["Properties"]


def test_the_backfill_state_machine_is_the_workflows_definition_on_the_migration_function(
    synthesized: Synthesized,
) -> None:
    _, props = _state_machine(synthesized)
    definition = json.loads(render(props["DefinitionString"]))
    function_id = synthesized.logical_id("AWS::Lambda::Function", "MigrationFunction")
    expected = build_definition(
        f"<{function_id}.Arn>", partition="<AWS::Partition>", task_timeout_seconds=900
    )
    # The CDK renders the partition as ${AWS::Partition}: compare everything but the resource ARN's token.
    task = definition["States"]["RunPages"]
    assert task["Parameters"]["FunctionName"] == f"<{function_id}.Arn>"
    assert task["Resource"].endswith(":states:::lambda:invoke")
    for key in ("Retry", "Catch", "ResultSelector", "ResultPath", "TimeoutSeconds"):
        assert task[key] == expected["States"]["RunPages"][key], key
    assert definition["States"]["MorePages"] == expected["States"]["MorePages"]
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is False
    assert _function(synthesized, "MigrationFunction")["Handler"] == "agent_memory.handlers.migration.handler"


def test_only_the_api_function_starts_the_backfill_and_knows_where_it_archives(
    synthesized: Synthesized,
) -> None:
    machine_id, _ = _state_machine(synthesized)
    api = _function(synthesized, "ApiFunction")["Environment"]["Variables"]
    assert api["AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN"] == {"Ref": machine_id}
    archive_id = synthesized.logical_id("AWS::S3::Bucket", "MigrationWorkflowArchiveBucket")
    assert api["AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"] == {"Ref": archive_id}
    worker = _function(synthesized, "MigrationFunction")["Environment"]["Variables"]
    assert worker["AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"] == {"Ref": archive_id}
    assert "AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN" not in worker  # it runs pages, it starts nothing
    # The dreaming function writes vectors too (promotions, merges) and runs the purge workflow's steps: the
    # archive bucket turns on its migration routing (both indexes during a migration) and archive purging.
    dreaming = _function(synthesized, "DreamingFunction")["Environment"]["Variables"]
    assert dreaming["AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"] == {"Ref": archive_id}
    assert "AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN" not in dreaming
    starters = []
    for logical_id in synthesized.of_type("AWS::IAM::Role"):
        statements = policy_statements(synthesized, logical_id)
        if any(
            "states:StartExecution" in as_list(s["Action"]) and f"<{machine_id}>" in as_list(s["Resource"])
            for s in statements
        ):
            starters.append(logical_id)
    api_role = _function(synthesized, "ApiFunction")["Role"]["Fn::GetAtt"][0]
    assert starters == [api_role]


def test_the_tenant_role_reaches_a_second_index_and_the_archive_of_its_own_tenant_only(
    synthesized: Synthesized,
) -> None:
    tenant_role = synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")
    statements = {s.get("Sid"): s for s in policy_statements(synthesized, tenant_role)}
    second = statements["OwnTenantMigrationIndexes"]
    assert as_list(second["Resource"]) == [
        next(r for r in as_list(second["Resource"]) if r.endswith("/index/mem-${aws:PrincipalTag/tenant}.*"))
    ]
    assert {"s3vectors:CreateIndex", "s3vectors:DeleteIndex", "s3vectors:PutVectors"} <= set(
        as_list(second["Action"])
    )
    retire = statements["OwnTenantIndexRetirement"]
    assert as_list(retire["Action"]) == ["s3vectors:DeleteIndex"]
    assert as_list(retire["Resource"])[0].endswith("/index/mem-${aws:PrincipalTag/tenant}")
    archive = statements["OwnTenantArchive"]
    assert sorted(as_list(archive["Action"])) == ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"]
    assert as_list(archive["Resource"])[0].endswith("/${aws:PrincipalTag/tenant}/*")
    # an archive is never deleted here (the tenant role deletes only staged job requests, in their own bucket)
    archive_bucket = synthesized.logical_id("AWS::S3::Bucket", "MigrationWorkflowArchiveBucket")
    deleting = [s for s in statements.values() if "s3:DeleteObject" in as_list(s["Action"])]
    assert [s["Sid"] for s in deleting] == ["OwnTenantJobRequests"]
    assert not any(archive_bucket in str(r) or r == "*" for s in deleting for r in as_list(s["Resource"]))


def test_the_archive_moves_exported_vectors_to_glacier_and_is_private(synthesized: Synthesized) -> None:
    archive_id = synthesized.logical_id("AWS::S3::Bucket", "MigrationWorkflowArchiveBucket")
    props = synthesized.resources[archive_id]["Properties"]
    (glacier,) = [r for r in props["LifecycleConfiguration"]["Rules"] if r.get("Transitions")]
    assert glacier["TagFilters"] == [{"Key": "agent-memory-archive", "Value": "vectors"}]
    assert glacier["Transitions"] == [
        {"StorageClass": "GLACIER_IR", "TransitionInDays": 0}
    ]  # readable by a purge
    assert props["PublicAccessBlockConfiguration"]["BlockPublicAcls"] is True
    encryption = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"


def test_failed_backfills_and_dead_letters_alarm_the_topic(synthesized: Synthesized) -> None:
    machine_id, _ = _state_machine(synthesized)
    ((topic_id, _),) = synthesized.of_type("AWS::SNS::Topic").items()
    alarms = [a["Properties"] for a in synthesized.of_type("AWS::CloudWatch::Alarm").values()]
    (failed,) = [
        a
        for a in alarms
        if a.get("MetricName") == "ExecutionsFailed"
        and a["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": machine_id}}]
    ]
    (dead,) = [a for a in alarms if a.get("MetricName") == "MigrationDeadLetters"]
    assert dead["Namespace"] == "AgentMemory" and dead["Dimensions"] == [
        {"Name": "service", "Value": "migration"}
    ]
    for alarm in (failed, dead):
        assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
