"""Every bucket and queue agent_memory.settings.resources declares is deployed from its declaration, without a
construct or stack line of its own: the bucket (SSE-KMS with the stack's key, TLS only, no public access,
access logs) or queue (the stack's key, TLS only, its own dead-letter queue), its name in the environment of
exactly the functions its accesses name, and each access granted to exactly those functions (their own role,
or the tenant role for a tenant access on a bucket, confined to its key prefix), with the same call in the
endpoint's policy. The service declares neither yet, so the path is proved on throwaway declarations
synthesized with the isolated profile (every function in the VPC, behind endpoints)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from infra_support import (
    Synthesized,
    as_list,
    functions_by_module,
    infra_test_context,
    policy_statements,
    render,
    synthesized_from,
)

from agent_memory.settings import resources
from agent_memory.settings.resources import BUCKETS, QUEUES, Access, Bucket, BucketAccess, Queue

TENANT = "${aws:PrincipalTag/tenant}"
THROWAWAY = Bucket(
    "Reports",
    setting="reports_bucket",
    expire_days=30,
    access=(
        BucketAccess(
            "TenantReports",
            ("s3:PutObject", "s3:GetObject", "s3:ListBucket"),
            functions=("api", "job_worker"),
            prefix="reports/",
            tenant=True,
        ),
        BucketAccess(
            "ReportSweep",
            ("s3:GetObject", "s3:DeleteObject"),
            functions=("dreaming",),
            prefix="reports/",
            key_actions=resources.KEY_READ_ACTIONS,
        ),
    ),
)

THROWAWAY_QUEUE = Queue(
    "Signals",
    setting="signals_queue",
    access=(
        Access("SignalSend", ("sqs:SendMessage",), functions=("api",)),
        Access(
            "SignalReceive",
            ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"),
            functions=("dreaming",),
            key_actions=resources.KEY_READ_ACTIONS,
        ),
    ),
)


@pytest.fixture(scope="module")
def with_throwaway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    """The isolated profile's stack with THROWAWAY and THROWAWAY_QUEUE declared too (synthesized here: the
    shared synth of the run is of the real declarations)."""
    from tests.iam.synth import _synthesize

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resources, "BUCKETS", (*BUCKETS, THROWAWAY))
        patch.setattr(resources, "QUEUES", (*QUEUES, THROWAWAY_QUEUE))
        result = _synthesize(infra_test_context("isolated"), tmp_path_factory.mktemp("cdk-out"))
    yield synthesized_from("isolated", result)


def _tenant_role(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")


def _check_bucket_settings(synthesized: Synthesized, bucket: Bucket) -> str:
    logical_id = synthesized.logical_id("AWS::S3::Bucket", f"Buckets{bucket.construct_id}")
    properties = synthesized.resources[logical_id]["Properties"]
    (key,) = synthesized.of_type("AWS::KMS::Key")
    (encryption,) = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": [key, "Arn"]},
    }
    assert encryption["BucketKeyEnabled"] is True
    assert set(properties["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(properties["PublicAccessBlockConfiguration"]) == 4
    logs = properties["LoggingConfiguration"]
    assert "AccessLogs" in logs["DestinationBucketName"]["Ref"]
    assert logs["LogFilePrefix"] == f"{bucket.construct_id.lower()}/"
    expiry = [r.get("ExpirationInDays") for r in properties["LifecycleConfiguration"]["Rules"]]
    assert bucket.expire_days in expiry
    (policy,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": logical_id}
    ]
    denied = [s for s in policy if s["Effect"] == "Deny"]
    assert {"Bool": {"aws:SecureTransport": "false"}} in [s["Condition"] for s in denied]
    return logical_id


def _declared_grants(bucket: Bucket, logical_id: str) -> dict[str, set[tuple[str, str, str]]]:
    """grantee ('tenant' or a handler module) -> {(action, resource, s3:prefix condition)}."""
    declared: dict[str, set[tuple[str, str, str]]] = {}
    for access in bucket.access:
        prefix = f"{TENANT}/{access.prefix}" if access.tenant else access.prefix
        for grantee in ("tenant",) if access.tenant else access.functions:
            rows = declared.setdefault(grantee, set())
            rows |= {(a, f"<{logical_id}.Arn>/{prefix}*", "") for a in access.object_actions}
            rows |= {
                (a, f"<{logical_id}.Arn>", f"{prefix}*" if prefix else "") for a in access.bucket_actions
            }
    return declared


def _granted(synthesized: Synthesized, role: str, logical_id: str) -> set[tuple[str, str, str]]:
    rows = set()
    for statement in policy_statements(synthesized, role):
        for resource in as_list(statement["Resource"]):
            if not str(resource).startswith(f"<{logical_id}.Arn>"):
                continue
            prefix = statement.get("Condition", {}).get("StringLike", {}).get("s3:prefix", [""])
            rows |= {(a, resource, as_list(prefix)[0]) for a in as_list(statement["Action"])}
    return rows


def check_declared_buckets(synthesized: Synthesized, buckets: tuple[Bucket, ...]) -> None:
    functions = functions_by_module(synthesized)
    ours = [k for k in synthesized.of_type("AWS::S3::Bucket") if k.startswith("Buckets")]
    assert len(ours) == len(buckets), ours
    for bucket in buckets:
        logical_id = _check_bucket_settings(synthesized, bucket)
        declared = _declared_grants(bucket, logical_id)
        named = {name for access in bucket.access for name in access.functions}
        for module, (role, environment) in functions.items():
            assert (environment.get(bucket.variable) == {"Ref": logical_id}) == (module in named), module
            assert _granted(synthesized, role, logical_id) == declared.get(module, set()), module
        tenant_rows = _granted(synthesized, _tenant_role(synthesized), logical_id)
        assert tenant_rows == declared.get("tenant", set())
        roles = {r for r in synthesized.of_type("AWS::IAM::Role")} - {_tenant_role(synthesized)}
        roles -= {role for role, _ in functions.values()}
        assert all(not _granted(synthesized, role, logical_id) for role in roles)


def test_the_real_declarations_are_deployed_as_declared(synthesized: Synthesized) -> None:
    check_declared_buckets(synthesized, BUCKETS)


def test_a_declared_bucket_is_built_named_and_granted_exactly_as_declared(
    with_throwaway: Synthesized,
) -> None:
    check_declared_buckets(with_throwaway, (*BUCKETS, THROWAWAY))
    functions = functions_by_module(with_throwaway)
    (key,) = with_throwaway.of_type("AWS::KMS::Key")
    sweep_role = functions["dreaming"][0]
    key_use = {
        a
        for s in policy_statements(with_throwaway, sweep_role)
        if f"<{key}.Arn>" in as_list(s["Resource"])
        for a in as_list(s["Action"])
    }
    assert set(resources.KEY_READ_ACTIONS) <= key_use


def test_each_access_is_in_the_s3_endpoint_policy_for_its_callers_roles(with_throwaway: Synthesized) -> None:
    endpoint = with_throwaway.logical_id("AWS::EC2::VPCEndpoint", "NetworkVpcS3")
    statements = {
        s["Sid"]: s
        for s in render(with_throwaway.resources[endpoint]["Properties"]["PolicyDocument"]["Statement"])
    }
    functions = functions_by_module(with_throwaway)
    logical_id = with_throwaway.logical_id("AWS::S3::Bucket", "BucketsReports")
    sweep = statements["ReportSweep"]
    assert set(as_list(sweep["Action"])) == {"s3:GetObject", "s3:DeleteObject"}
    assert as_list(sweep["Resource"]) == [f"<{logical_id}.Arn>/reports/*"]
    assert as_list(sweep["Condition"]["ArnEquals"]["aws:PrincipalArn"]) == [
        f"<{functions['dreaming'][0]}.Arn>"
    ]
    tenant = f"<{_tenant_role(with_throwaway)}.Arn>"
    assert as_list(statements["TenantReports"]["Condition"]["ArnEquals"]["aws:PrincipalArn"]) == [tenant]
    assert as_list(statements["TenantReportsBucket"]["Resource"]) == [f"<{logical_id}.Arn>"]


def test_the_stack_with_a_declared_bucket_passes_cdk_nag_and_cfn_lint(with_throwaway: Synthesized) -> None:
    from cfnlint.api import lint

    violations = [
        f"{v['ruleName']} at {[c['constructPath'] for c in v['violatingConstructs']]}"
        for report in with_throwaway.validation_report.get("pluginReports", [])
        for v in report.get("violations", [])
    ]
    assert violations == [] and with_throwaway.synth_error is None, violations
    matches = lint(json.dumps(with_throwaway.template), regions=["us-east-1"])
    assert [f"{m.rule.id} {m.path}: {m.message}" for m in matches if m.rule.id.startswith("E")] == []


def check_declared_queues(synthesized: Synthesized, queues: tuple[Queue, ...]) -> None:
    functions = functions_by_module(synthesized)
    (key,) = synthesized.of_type("AWS::KMS::Key")
    ours = [k for k in synthesized.of_type("AWS::SQS::Queue") if k.startswith("Queues")]
    assert len(ours) == 2 * len(queues), ours  # each with its dead-letter queue
    for queue in queues:
        (logical_id,) = [
            k for k in ours if k.startswith(f"Queues{queue.construct_id}") and "DeadLetters" not in k
        ]
        properties = synthesized.resources[logical_id]["Properties"]
        assert properties["KmsMasterKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
        target = properties["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        assert target.startswith(f"Queues{queue.construct_id}DeadLetters")
        assert synthesized.resources[target]["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
        for queue_id in (logical_id, target):
            (policy,) = [
                p["Properties"]["PolicyDocument"]["Statement"]
                for p in synthesized.of_type("AWS::SQS::QueuePolicy").values()
                if {"Ref": queue_id} in p["Properties"]["Queues"]
            ]
            assert {"Bool": {"aws:SecureTransport": "false"}} in [
                s["Condition"] for s in policy if s["Effect"] == "Deny"
            ]
        named = {name for access in queue.access for name in access.functions}
        for module, (role, environment) in functions.items():
            assert (environment.get(queue.variable) == {"Ref": logical_id}) == (module in named), module
            declared = {a for access in queue.access if module in access.functions for a in access.actions}
            granted = {
                action
                for s in policy_statements(synthesized, role)
                if f"<{logical_id}.Arn>" in as_list(s["Resource"])
                or f"<{target}.Arn>" in as_list(s["Resource"])
                for action in as_list(s["Action"])
            }
            assert granted == declared, module


def test_the_real_queue_declarations_are_deployed_as_declared(synthesized: Synthesized) -> None:
    check_declared_queues(synthesized, QUEUES)
    if not QUEUES:  # no queue, no SQS endpoint (an endpoint at rest costs money)
        assert not [k for k in synthesized.of_type("AWS::EC2::VPCEndpoint") if "sqs" in k.lower()]


def test_a_declared_queue_is_built_named_and_granted_exactly_as_declared(with_throwaway: Synthesized) -> None:
    check_declared_queues(with_throwaway, (*QUEUES, THROWAWAY_QUEUE))
    endpoint = with_throwaway.logical_id("AWS::EC2::VPCEndpoint", "Endpointsqs")
    statements = {
        s["Sid"]: s
        for s in render(with_throwaway.resources[endpoint]["Properties"]["PolicyDocument"]["Statement"])
    }
    assert set(statements) == {"SignalSend", "SignalReceive"}
    role = functions_by_module(with_throwaway)["api"][0]
    assert as_list(statements["SignalSend"]["Condition"]["ArnEquals"]["aws:PrincipalArn"]) == [
        f"<{role}.Arn>"
    ]


@pytest.mark.parametrize(
    ("access", "refusal"),
    [
        (BucketAccess("X", ("s3:GetObject",), functions=("nowhere",)), "names no function"),
        (BucketAccess("X", ("s3:GetObject",), functions=("authorizer",), tenant=True), "tenant role"),
        (BucketAccess("X", ("s3:*",), functions=("api",)), "no wildcard"),
        (BucketAccess("X", ("dynamodb:GetItem",), functions=("api",)), "s3: actions"),
    ],
)
def test_a_declaration_the_stack_cannot_grant_is_refused(access: BucketAccess, refusal: str) -> None:
    from infra.constructs.declared_buckets import _check

    with pytest.raises(ValueError, match=refusal):
        _check(Bucket("Bad", setting="bad_bucket", access=(access,)), access, {"api", "authorizer"}, {"api"})
