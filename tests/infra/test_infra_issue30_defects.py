"""Issue 30's template defects, each checked on both profiles: alarm notifications that CloudWatch may
publish (1), every record/vector writer on the embedding-migration route (2), a curator-failure alarm, the
console served without the API function, and docs/deploy.md's alarm counts read from the template (6)."""

from __future__ import annotations

import ast
import re
from typing import Any

from infra_support import ROOT, Synthesized, as_list, render

ARCHIVE_VARIABLE = "AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"


def _alarm_topic(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::SNS::Topic", "AlarmTopic")


def _topic_policy_statements(synthesized: Synthesized, topic: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in synthesized.of_type("AWS::SNS::TopicPolicy").values()
        if {"Ref": topic} in policy["Properties"]["Topics"]
        for statement in render(policy["Properties"]["PolicyDocument"]["Statement"])
    ]


# ---------------------------------------------------------------- defect 1: alarms that reach someone


def test_cloudwatch_may_publish_this_accounts_alarms_to_the_alarm_topic(
    profile_synthesized: Synthesized,
) -> None:
    topic = _alarm_topic(profile_synthesized)
    statements = _topic_policy_statements(profile_synthesized, topic)
    # A topic policy replaces SNS's default: without an Allow, nobody (CloudWatch included) may publish.
    allows = [
        s
        for s in statements
        if s["Effect"] == "Allow"
        and s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
        and "sns:Publish" in as_list(s["Action"])
        and s["Resource"] == f"<{topic}>"
    ]
    assert len(allows) == 1, statements
    conditions = allows[0]["Condition"]
    assert conditions["StringEquals"] == {"aws:SourceAccount": "<AWS::AccountId>"}
    assert conditions["ArnLike"] == {
        "aws:SourceArn": "arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:*"
    }
    # ...and the TLS-only deny stays
    assert any(
        s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )


def test_every_alarm_notifies_the_topic(profile_synthesized: Synthesized) -> None:
    topic = _alarm_topic(profile_synthesized)
    alarms = profile_synthesized.of_type("AWS::CloudWatch::Alarm")
    silent = [k for k, a in alarms.items() if {"Ref": topic} not in a["Properties"].get("AlarmActions", [])]
    assert silent == []


# ---------------------------------------------------------------- defect 2: writers on the migration route


def _tenant_role(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")


def _trusted_roles(synthesized: Synthesized) -> set[str]:
    """Logical ids of the roles the tenant role's trust policy lets assume it."""
    document = synthesized.resources[_tenant_role(synthesized)]["Properties"]["AssumeRolePolicyDocument"]
    found = set()
    for statement in document["Statement"]:
        for principal in as_list(statement.get("Principal", {}).get("AWS", [])):
            rendered = str(render(principal))
            found |= set(re.findall(r"<(\w+)\.Arn>", rendered))
    return found


WRITER_GRAPHS = {"API", "CHAT", "JOBS", "WORKER", "BACKFILL"}
"""The `wiring/process.py` slots whose builders (`wiring/aws.py`) wire a writer: memory, sessions/chat,
dreaming, migration, erasure (not AUTHORIZER or FILE_SERVER)."""


def _handler_builds_aws_services(handler: str) -> bool:
    """Whether the handler's module takes a writer graph from `wiring/process.py` (`process.WORKER`, ...) or
    imports a builder of `wiring/aws.py` that builds one."""
    module = handler.rsplit(".", 1)[0]
    path = ROOT / "functions" / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text())
    names = {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    slots = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "process"
    }
    builders = {"build_api", "build_chat", "build_jobs", "build_worker", "build_backfill", "build_aws"}
    return bool(names & (builders | WRITER_GRAPHS) or slots & WRITER_GRAPHS)


def test_every_function_that_can_write_records_or_vectors_routes_them_through_the_migration(
    profile_synthesized: Synthesized,
) -> None:
    archive = profile_synthesized.logical_id("AWS::S3::Bucket", "MigrationWorkflowArchive")
    trusted = _trusted_roles(profile_synthesized)
    writers = {
        logical: fn["Properties"]
        for logical, fn in profile_synthesized.of_type("AWS::Lambda::Function").items()
        if fn["Properties"]["Role"]["Fn::GetAtt"][0] in trusted
    }
    # The writers: every function that may take the tenant role's credentials (which may PutItem and
    # PutVectors), found from the trust policy rather than listed by hand
    handlers = {props["Handler"].rsplit(".", 2)[-2] for props in writers.values()}
    assert {"api", "chat", "jobs", "dreaming", "migration"} <= handlers, handlers
    missing = {
        props["Handler"]
        for props in writers.values()
        if props.get("Environment", {}).get("Variables", {}).get(ARCHIVE_VARIABLE) != {"Ref": archive}
    }
    assert missing == set(), f"writers without {ARCHIVE_VARIABLE}: {sorted(missing)}"


def test_no_function_outside_the_tenant_roles_trust_builds_the_writers(
    profile_synthesized: Synthesized,
) -> None:
    # The converse: a function that wires the services (and so the write path) but cannot assume the tenant
    # role would be a writer the enumeration above misses.
    trusted = _trusted_roles(profile_synthesized)
    untrusted_builders = [
        props["Handler"]
        for props in (f["Properties"] for f in profile_synthesized.of_type("AWS::Lambda::Function").values())
        if str(props.get("Handler", "")).startswith("agent_memory.handlers.")
        and props["Role"]["Fn::GetAtt"][0] not in trusted
        and _handler_builds_aws_services(props["Handler"])
    ]
    assert untrusted_builders == []


# ---------------------------------------------------------------- defect 6: console, curator alarm, doc counts


def test_a_failed_curator_execution_raises_an_alarm(profile_synthesized: Synthesized) -> None:
    curator = profile_synthesized.logical_id("AWS::StepFunctions::StateMachine", "CuratorWorkflow")
    failed = [
        a["Properties"]
        for a in profile_synthesized.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ExecutionsFailed"
        and {"Name": "StateMachineArn", "Value": {"Ref": curator}} in a["Properties"].get("Dimensions", [])
    ]
    assert len(failed) == 1


def _integration_function(synthesized: Synthesized, method: dict[str, Any]) -> str:
    uri = str(render(method["Properties"]["Integration"]["Uri"]))
    (function,) = re.findall(r"<(\w+)\.Arn>", uri)
    return function


def test_unauthenticated_methods_never_run_the_api_function(profile_synthesized: Synthesized) -> None:
    methods = profile_synthesized.of_type("AWS::ApiGateway::Method")
    functions = profile_synthesized.of_type("AWS::Lambda::Function")
    unauthenticated = {k: m for k, m in methods.items() if m["Properties"]["AuthorizationType"] == "NONE"}
    assert unauthenticated, "the console page is expected to stay reachable without a key"
    for logical, method in unauthenticated.items():
        target = functions[_integration_function(profile_synthesized, method)]["Properties"]
        assert target["Handler"] == "agent_memory.handlers.console.handler", logical
        assert target["MemorySize"] <= 256, logical
        # Powertools' settings only: no table, bucket, role or key name
        variables = target.get("Environment", {}).get("Variables", {})
        assert all(name.startswith("POWERTOOLS_") for name in variables), variables


def test_the_console_function_role_grants_nothing_but_logs_and_traces(
    profile_synthesized: Synthesized,
) -> None:
    from infra_support import actions_of, policy_statements

    role = next(
        f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in profile_synthesized.of_type("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "agent_memory.handlers.console.handler"
    )
    actions = actions_of(policy_statements(profile_synthesized, role))
    assert {a.split(":", 1)[0] for a in actions} <= {"logs", "xray"}, actions


def test_the_console_methods_have_their_own_lower_throttle(profile_synthesized: Synthesized) -> None:
    from infra.constructs.memory_api import CONSOLE_THROTTLE_BURST, CONSOLE_THROTTLE_RATE

    (stage,) = profile_synthesized.of_type("AWS::ApiGateway::Stage").values()
    settings = {(m["ResourcePath"], m["HttpMethod"]): m for m in stage["Properties"]["MethodSettings"]}
    stage_wide = settings[("/*", "*")]
    for path in ("/~1console", "/~1console~1{asset}"):
        console = settings[(path, "GET")]
        assert (console["ThrottlingRateLimit"], console["ThrottlingBurstLimit"]) == (
            CONSOLE_THROTTLE_RATE,
            CONSOLE_THROTTLE_BURST,
        )
        assert console["ThrottlingRateLimit"] < stage_wide["ThrottlingRateLimit"]


_ALARM_ROW = re.compile(
    r"^\| CloudWatch alarms \| `lean`: (?P<lean>\d+) standard alarms[^|]*; `isolated`: (?P<isolated>\d+) x "
    r"\$0\.10 \| (?P<lean_dollars>[\d.]+) \| (?P<isolated_dollars>[\d.]+) \|$",
    re.MULTILINE,
)


def test_deploy_md_alarm_counts_are_the_templates(profile_synthesized: Synthesized) -> None:
    # The test deployment differs from cdk.json in tenants, schedules and models; none of them adds an alarm
    # (alarms are per function, dead-letter queue and workflow), so the counts are the shipped stack's.
    row = _ALARM_ROW.search((ROOT / "docs" / "deploy.md").read_text())
    assert row, "docs/deploy.md has no CloudWatch alarms row in the at-rest table"
    count = len(profile_synthesized.of_type("AWS::CloudWatch::Alarm"))
    assert int(row[profile_synthesized.profile]) == count
    assert float(row[f"{profile_synthesized.profile}_dollars"]) == round(count * 0.10, 2)
