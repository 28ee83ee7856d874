"""After-deploy checks that would catch issue 30's defect classes on a real stack (opt-in; never runs offline).

Each check drives the deployed service the way production does (the API with a tenant key, the state machine
with the schedule's own input, the decay function with the schedule's own event, CloudWatch's alarm action)
and prints one line per check; a failure names the call, the role that made it and AWS's error code (or the
API's status and error code). docs/deploy.md ("Check the deployment") maps each check to the defect class it
catches.

Set, besides AWS credentials allowed to read the stack's outputs, start the dreaming state machine, invoke the
decay function, set alarm states and create/delete one SQS queue and subscription:
- AGENT_MEMORY_E2E_STACK: the stack name (outputs are read from CloudFormation);
- AGENT_MEMORY_E2E_URL, AGENT_MEMORY_E2E_KEY: ApiUrl and a tenant's key with read, write and admin on `*`
  (migration and purge plans cover the whole tenant; `python -m infra.onboard api-key <t> --namespaces '*'
  --scopes read,write,admin`), AGENT_MEMORY_E2E_TENANT: that tenant;
- AGENT_MEMORY_E2E_OTHER_KEY: a key of ANOTHER tenant (read, write on `*`), for the cross-tenant check.

    AGENT_MEMORY_E2E_STACK=AgentMemory ... .venv/bin/python -m pytest tests/e2e/test_deployed_stack_e2e.py -s
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

ENV = {
    name: os.environ.get(f"AGENT_MEMORY_E2E_{name}", "")
    for name in ("STACK", "URL", "KEY", "TENANT", "OTHER_KEY")
}

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not all(ENV.values()), reason="set AGENT_MEMORY_E2E_STACK, _URL, _KEY, _TENANT, _OTHER_KEY"
    ),
]


class CheckFailed(Exception):
    def __init__(self, call: str, role: str, code: str, detail: str = "") -> None:
        super().__init__(f"{call} as {role}: {code} {detail}".strip())


@dataclass
class Deployed:
    outputs: dict[str, str]
    http: Any
    other: Any
    session: Any
    namespace: str

    def client(self, service: str) -> Any:
        return self.session.client(service)


def aws(role: str, call: str, action: Callable[[], Any]) -> Any:
    """Run one AWS call; a refusal becomes CheckFailed naming the call, the role and AWS's error code."""
    from botocore.exceptions import ClientError

    try:
        return action()
    except ClientError as error:
        raise CheckFailed(
            call, role, error.response["Error"]["Code"], error.response["Error"].get("Message", "")
        ) from error


def api(
    http: Any,
    method: str,
    path: str,
    body: Any = None,
    *,
    expect: tuple[int, ...] = (200, 201),
    headers: Any = None,
) -> Any:
    """One API call; an unexpected status becomes CheckFailed with the API's error code (the function that
    served it ran with its own role and the tenant role: its log names the AWS error)."""
    response = http.request(method, path, json=body, headers=headers or {})
    if response.status_code not in expect:
        try:
            error = response.json().get("error", {})
        except ValueError:
            error = {}
        role = "chat function" if "/sessions" in path else "API function"
        raise CheckFailed(
            f"{method} {path}",
            f"{role} (tenant credentials)",
            f"HTTP {response.status_code} {error.get('code', '')}",
            str(error.get("message", ""))[:300],
        )
    return response.json() if response.content else {}


# ---------------------------------------------------------------- the checks


def chat_turn_with_cache_point(d: Deployed) -> str:
    session = api(d.http, "POST", "/v1/sessions", {"namespace": d.namespace})
    sid = session["session"]["id"]
    try:
        first = api(
            d.http, "POST", f"/v1/sessions/{sid}/turns", {"message": "Remember that deploys use blue-green."}
        )
        second = api(d.http, "POST", f"/v1/sessions/{sid}/turns", {"message": "How do deploys work?"})
    finally:
        api(d.http, "POST", f"/v1/sessions/{sid}/end", expect=(200, 404, 409))
    # The snapshot block is followed by a cachePoint: the second turn reads the prefix the first one wrote.
    if second["cache_hit_ratio"] <= 0:
        raise CheckFailed(
            "Converse (second turn)", "chat function role", "NoCacheRead", f"usage {second['usage']}"
        )
    return f"model {first['model_id']}, second turn cache hit ratio {second['cache_hit_ratio']:.2f}"


def idempotent_replay(d: Deployed) -> str:
    key = {"Idempotency-Key": uuid.uuid4().hex}
    body = {"namespace": d.namespace, "content": f"Smoke {d.namespace}: staging runs in eu-west-1"}
    first = api(d.http, "POST", "/v1/memories", body, headers=key)
    again = api(d.http, "POST", "/v1/memories", body, headers=key)
    if first.get("memory", {}).get("id") != again.get("memory", {}).get("id"):
        raise CheckFailed(
            "POST /v1/memories (replay)",
            "API function role (idempotency table)",
            "NotReplayed",
            f"{first} vs {again}",
        )
    return f"replayed {first['memory']['id']}"


def _schedule_input(d: Deployed, machine: str) -> dict[str, Any]:
    scheduler = d.client("scheduler")
    group = f"{ENV['STACK']}-jobs"
    names = aws("operator", "scheduler:ListSchedules", lambda: scheduler.list_schedules(GroupName=group))[
        "Schedules"
    ]
    for entry in names:
        schedule = aws(
            "operator",
            "scheduler:GetSchedule",
            lambda e=entry: scheduler.get_schedule(GroupName=group, Name=e["Name"]),
        )
        target = schedule["Target"]
        if target["Arn"] == machine and ENV["TENANT"] in target.get("Input", ""):
            return dict(json.loads(target["Input"]))
    raise CheckFailed(
        "scheduler:GetSchedule",
        "operator",
        "NoSchedule",
        f"no schedule in {group} starts {machine} for {ENV['TENANT']}",
    )


def dream_run_as_scheduled(d: Deployed) -> str:
    machine = d.outputs["DreamingStateMachineArn"]
    states = d.client("stepfunctions")
    execution_input = _schedule_input(d, machine)  # exactly what the nightly schedule sends
    started = aws(
        "operator",
        "states:StartExecution",
        lambda: states.start_execution(stateMachineArn=machine, input=json.dumps(execution_input)),
    )
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        described = states.describe_execution(executionArn=started["executionArn"])
        if described["status"] != "RUNNING":
            break
        time.sleep(5)
    if described["status"] != "SUCCEEDED":
        raise CheckFailed(
            "states:StartExecution (nightly input)",
            "dreaming state machine role",
            described["status"],
            str(described.get("error", "")) + " " + str(described.get("cause", ""))[:300],
        )
    return f"output {described.get('output')}"


def decay_job(d: Deployed) -> str:
    function = _decay_function(d)
    answer = aws(
        "operator",
        "lambda:Invoke",
        lambda: d.client("lambda").invoke(
            FunctionName=function,
            Payload=json.dumps({"job": "archive_decayed", "tenants": [ENV["TENANT"]], "dry_run": True}),
        ),
    )
    payload = json.loads(answer["Payload"].read() or b"{}")
    if answer.get("FunctionError"):
        raise CheckFailed(
            "lambda:Invoke decay job",
            "decay job function role",
            payload.get("errorType", "FunctionError"),
            str(payload.get("errorMessage", ""))[:300],
        )
    return f"dry run {payload.get('tenants')}"


def _decay_function(d: Deployed) -> str:
    resources = aws(
        "operator",
        "cloudformation:ListStackResources",
        lambda: d.client("cloudformation").list_stack_resources(StackName=ENV["STACK"]),
    )
    for resource in resources["StackResourceSummaries"]:
        if resource["ResourceType"] == "AWS::Lambda::Function" and resource["LogicalResourceId"].startswith(
            "DecayJobFunction"
        ):
            return str(resource["PhysicalResourceId"])
    raise CheckFailed("cloudformation:ListStackResources", "operator", "NoDecayFunction")


def migration_plan_dry_run(d: Deployed) -> str:
    """Plan only (nothing starts), then withdraw the plan; 409 when a migration is already under way."""
    body = {"embedder": "amazon.titan-embed-text-v2:0@256"}
    status = api(d.http, "POST", "/v1/admin/migration/plan", body, expect=(200, 201, 409))
    api(d.http, "POST", "/v1/admin/migration/rollback", {"reason": "smoke test"}, expect=(200, 409))
    return f"planned ({status.get('state', 'a migration is already under way')}), withdrawn"


def purge_plan_dry_run(d: Deployed) -> str:
    plan = api(d.http, "POST", "/v1/admin/purges", {"kind": "namespace", "namespace": d.namespace})
    return f"plan {plan['id']}: {plan['state']} (not executed)"


def archive_write_and_read(d: Deployed) -> str:
    """The migration archive bucket under the tenant role: the purge plan above reads the tenant's archive
    prefix (ListBucket + GetObject with the data key); the migration status names the last archive, whose
    manifest must be readable by the operator and SSE-KMS encrypted with the stack's key."""
    status = api(d.http, "GET", "/v1/admin/migration/status", expect=(200, 404))
    receipt = status.get("archive") if isinstance(status, dict) else None
    if not receipt:
        return "no archive yet on this tenant (run a migration to archive to exercise the write)"
    bucket = d.outputs["MigrationArchiveBucketName"]
    key = str(receipt["manifest"]).split(f"{bucket}/", 1)[-1]
    head = aws("operator", "s3:HeadObject", lambda: d.client("s3").head_object(Bucket=bucket, Key=key))
    if head.get("ServerSideEncryption") != "aws:kms":
        raise CheckFailed("s3:HeadObject archive manifest", "operator", "NotKmsEncrypted")
    return f"manifest {key} ({receipt['vectors']} vectors), SSE-KMS"


def cross_tenant_refused(d: Deployed) -> str:
    mine = api(
        d.http,
        "POST",
        "/v1/memories",
        {"namespace": d.namespace, "content": f"Smoke {d.namespace}: secret code 4711"},
    )
    memory_id = mine["memory"]["id"]
    response = d.other.request("GET", f"/v1/memories/{memory_id}")
    if response.status_code not in (403, 404):
        raise CheckFailed(
            f"GET /v1/memories/{memory_id}",
            "another tenant's key",
            f"HTTP {response.status_code}",
            "expected 403/404",
        )
    hits = api(
        d.other,
        "POST",
        "/v1/recall",
        {"namespaces": [d.namespace], "query": "secret code"},
        expect=(200, 403),
    )
    if any(hit["memory"]["id"] == memory_id for hit in hits.get("results", [])):
        raise CheckFailed("POST /v1/recall", "another tenant's key", "CrossTenantRead")
    return f"another tenant got {response.status_code} and no recall hit"


def alarm_notification_delivered(d: Deployed) -> str:
    """Force an alarm into ALARM; its SNS action must deliver to a throw-away SQS subscriber (topic policy,
    key policy and subscription all exercised), and the alarm history must record the action as executed."""
    topic = d.outputs["AlarmTopicArn"]
    sqs, sns, cloudwatch = d.client("sqs"), d.client("sns"), d.client("cloudwatch")
    queue = aws(
        "operator", "sqs:CreateQueue", lambda: sqs.create_queue(QueueName=f"am-smoke-{uuid.uuid4().hex[:8]}")
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": topic}},
            }
        ]
    }
    sqs.set_queue_attributes(QueueUrl=queue, Attributes={"Policy": json.dumps(policy)})
    subscription = aws(
        "operator",
        "sns:Subscribe",
        lambda: sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, ReturnSubscriptionArn=True),
    )["SubscriptionArn"]
    alarm = next(a for a in cloudwatch.describe_alarms(ActionPrefix=topic)["MetricAlarms"])
    try:
        aws(
            "operator",
            "cloudwatch:SetAlarmState",
            lambda: cloudwatch.set_alarm_state(
                AlarmName=alarm["AlarmName"], StateValue="ALARM", StateReason="smoke test"
            ),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            messages = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10).get("Messages", [])
            if any(alarm["AlarmName"] in m["Body"] for m in messages):
                return f"{alarm['AlarmName']} → {topic} delivered"
        history = cloudwatch.describe_alarm_history(
            AlarmName=alarm["AlarmName"], HistoryItemType="Action", MaxRecords=5
        )
        summary = [h["HistorySummary"] for h in history["AlarmHistoryItems"]]
        raise CheckFailed(
            "sns:Publish (alarm action)", "cloudwatch.amazonaws.com", "NotDelivered", str(summary)[:300]
        )
    finally:
        cloudwatch.set_alarm_state(
            AlarmName=alarm["AlarmName"], StateValue="OK", StateReason="smoke test done"
        )
        sns.unsubscribe(SubscriptionArn=subscription)
        sqs.delete_queue(QueueUrl=queue)


CHECKS: list[tuple[str, str, Callable[[Deployed], str]]] = [
    (
        "chat turn with a cache point",
        "chat model grants (profile + every Region's foundation model), chat KMS",
        chat_turn_with_cache_point,
    ),
    ("idempotent replay", "idempotency table grants", idempotent_replay),
    (
        "dream run as scheduled",
        "Distributed Map rights, history limit, schedule input",
        dream_run_as_scheduled,
    ),
    ("decay job", "decay job's tenant credentials and migration route", decay_job),
    ("migration plan dry run", "migration route, tenant role's second-index grants", migration_plan_dry_run),
    ("purge plan dry run", "purge grants (sessions GSI, archive listing)", purge_plan_dry_run),
    ("archive write and read", "archive prefix, tenant role's KMS", archive_write_and_read),
    ("cross-tenant request refused", "LeadingKeys / index scoping, trust session tags", cross_tenant_refused),
    (
        "alarm notification delivered",
        "topic policy, key policy (alarms that reach someone)",
        alarm_notification_delivered,
    ),
]


@pytest.fixture(scope="module")
def deployed() -> Deployed:
    import boto3
    import httpx

    session = boto3.session.Session()
    stack = session.client("cloudformation").describe_stacks(StackName=ENV["STACK"])["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}

    def http(key: str) -> Any:
        return httpx.Client(base_url=ENV["URL"], headers={"Authorization": f"Bearer {key}"}, timeout=60)

    return Deployed(
        outputs, http(ENV["KEY"]), http(ENV["OTHER_KEY"]), session, f"/smoke/{uuid.uuid4().hex[:12]}"
    )


@pytest.mark.parametrize("name", [name for name, _, _ in CHECKS])
def test_deployed_stack(deployed: Deployed, name: str) -> None:
    _, catches, check = next(c for c in CHECKS if c[0] == name)
    try:
        print(f"PASS  {name}: {check(deployed)}")
    except CheckFailed as failure:
        print(f"FAIL  {name} (catches: {catches}): {failure}")
        raise
