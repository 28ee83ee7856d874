"""Defects planted into a copy of the synthesized template, each of which the IAM contract must catch
(tests/infra/test_infra_iam_mutations.py): the twelve of issue 30's desk review, and at least one per policy
kind (identity, trust, key, topic, Lambda permission, bucket, schedule role, service trust, endpoint, an
over-broad tenant grant).

A plant edits the template's JSON text of one resource: every edit must find what it replaces, so a plant
that no longer matches the template fails loudly instead of passing unnoticed. A plant returns None where
the profile has nothing to plant it in (the `lean` profile has no VPC endpoint)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

Template = dict[str, Any]
Plant = Callable[[Template], Template | None]
TAG = "${aws:PrincipalTag/tenant}"


class PlantMissed(AssertionError):
    """The template no longer has what a plant edits: update the plant with the template."""


def _logical(template: Template, kind: str, fragment: str) -> str:
    found = [k for k, r in template["Resources"].items() if r["Type"] == kind and fragment in k]
    if len(found) != 1:
        raise PlantMissed(f"expected one {kind} matching {fragment!r}, got {found}")
    return found[0]


def _edit(template: Template, logical: str, old: str, new: str) -> Template:
    text = json.dumps(template["Resources"][logical])
    if old not in text:
        raise PlantMissed(f"{logical} has no {old!r}")
    edited = copy.deepcopy(template)
    edited["Resources"][logical] = json.loads(text.replace(old, new))
    return edited


def _tenant_policy(template: Template) -> str:
    return _logical(template, "AWS::IAM::Policy", "TenantAccessRoleDefaultPolicy")


def _drop_statements(template: Template, logical: str, path: tuple[str, ...], sid: str) -> Template:
    edited = copy.deepcopy(template)
    document = edited["Resources"][logical]["Properties"]
    for key in path:
        document = document[key]
    kept = [s for s in document["Statement"] if s.get("Sid") != sid]
    if len(kept) == len(document["Statement"]):
        raise PlantMissed(f"{logical} has no statement {sid}")
    document["Statement"] = kept
    return edited


def tenant_without_get_index(t: Template) -> Template:
    return _edit(t, _tenant_policy(t), '"s3vectors:GetIndex", ', "")


def tenant_without_batch_write(t: Template) -> Template:
    return _edit(t, _tenant_policy(t), '"dynamodb:BatchWriteItem", ', "")


def tenant_without_table_indexes(t: Template) -> Template:
    return _edit(t, _tenant_policy(t), '"/index/*"', '"/index/gsi9"')


def functions_without_tag_session(t: Template) -> Template:
    for kind_fragment in (
        "ApiFunctionRoleDefaultPolicy",
        "ChatFunctionRoleDefaultPolicy",
        "DecayJobFunctionRoleDefaultPolicy",
        "DreamingFunctionRoleDefaultPolicy",
        "MigrationFunctionRoleDefaultPolicy",
    ):
        t = _edit(
            t,
            _logical(t, "AWS::IAM::Policy", kind_fragment),
            '["sts:AssumeRole", "sts:TagSession"]',
            '"sts:AssumeRole"',
        )
    return t


def wrong_archive_prefix(t: Template) -> Template:
    return _edit(t, _tenant_policy(t), f'"/{TAG}/*"', f'"/archives/{TAG}/*"')


def chat_grant_on_profile_only(t: Template) -> Template:
    policy = _logical(t, "AWS::IAM::Policy", "ChatFunctionRoleDefaultPolicy")
    edited = copy.deepcopy(t)
    for statement in edited["Resources"][policy]["Properties"]["PolicyDocument"]["Statement"]:
        if statement.get("Sid") == "ChatModels":
            statement["Resource"] = [r for r in statement["Resource"] if "inference-profile" in json.dumps(r)]
            return edited
    raise PlantMissed("no ChatModels statement")


def leading_keys_broadened(t: Template) -> Template:
    return _edit(t, _tenant_policy(t), f'"{TAG}#*"', f'"{TAG}*"')


def _trust(t: Template) -> str:
    return _logical(t, "AWS::IAM::Role", "TenantAccessRole")


def trust_without_tag_session(t: Template) -> Template:
    return _edit(t, _trust(t), '"Action": ["sts:AssumeRole", "sts:TagSession"]', '"Action": "sts:AssumeRole"')


def function_removed_from_trust(t: Template) -> Template:
    role = _logical(t, "AWS::IAM::Role", "DecayJobFunctionRole")
    return _edit(t, _trust(t), f'{{"Fn::GetAtt": ["{role}", "Arn"]}}, ', "")


def tenant_kms_describe_only(t: Template) -> Template:
    return _edit(
        t,
        _tenant_policy(t),
        '["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"]',
        '"kms:DescribeKey"',
    )


def chat_model_pinned_to_stack_region(t: Template) -> Template:
    policy = _logical(t, "AWS::IAM::Policy", "ChatFunctionRoleDefaultPolicy")
    return _edit(
        t,
        policy,
        '":bedrock:*::foundation-model/anthropic',
        '":bedrock:", {"Ref": "AWS::Region"}, "::foundation-model/anthropic',
    )


def isolated_s3vectors_endpoint_without_get_index(t: Template) -> Template | None:
    endpoints = [
        k
        for k, r in t["Resources"].items()
        if r["Type"] == "AWS::EC2::VPCEndpoint" and "s3vectors" in json.dumps(r["Properties"]["ServiceName"])
    ]
    if not endpoints:
        return None  # `lean`: no endpoint, nothing to plant
    return _edit(t, endpoints[0], '"s3vectors:GetIndex", ', "")


def key_policy_without_cloudwatch(t: Template) -> Template:
    key = _logical(t, "AWS::KMS::Key", "DataKey")
    return _drop_statements(t, key, ("KeyPolicy",), "AllowCloudWatchAlarmsToEncryptedTopic")


def topic_policy_without_cloudwatch(t: Template) -> Template:
    policy = _logical(t, "AWS::SNS::TopicPolicy", "AlarmTopic")
    return _drop_statements(t, policy, ("PolicyDocument",), "AllowCloudWatchAlarmsToPublish")


def chat_lambda_permission_removed(t: Template) -> Template:
    edited = copy.deepcopy(t)
    del edited["Resources"][_logical(t, "AWS::Lambda::Permission", "v1sessionsproxyANYApiPermissionAgent")]
    return edited


def archive_bucket_policy_without_tls(t: Template) -> Template:
    policy = _logical(t, "AWS::S3::BucketPolicy", "MigrationWorkflowArchive")
    edited = copy.deepcopy(t)
    document = edited["Resources"][policy]["Properties"]["PolicyDocument"]
    document["Statement"] = [s for s in document["Statement"] if "aws:SecureTransport" not in json.dumps(s)]
    return edited


def scheduler_role_cannot_invoke(t: Template) -> Template:
    # The stack's own scheduler role (the decay job's), not the workflows' (DreamingWorkflowSchedulerRole...)
    (policy,) = [k for k in t["Resources"] if k.startswith("SchedulerRoleDefaultPolicy")] or [""]
    if not policy:
        raise PlantMissed("no SchedulerRoleDefaultPolicy")
    return _edit(t, policy, '"lambda:InvokeFunction"', '"lambda:GetFunction"')


def state_machine_role_trusts_lambda(t: Template) -> Template:
    role = _logical(t, "AWS::IAM::Role", "DreamingWorkflowStateMachineRole")
    return _edit(t, role, '"states.amazonaws.com"', '"lambda.amazonaws.com"')


def tenant_index_broadened(t: Template) -> Template:
    return _edit(t, _tenant_policy(t), f'"/index/mem-{TAG}"', f'"/index/mem-{TAG}*"')


ISSUE_PLANTS: dict[str, Plant] = {
    "tenant role without GetIndex": tenant_without_get_index,
    "tenant role without BatchWriteItem": tenant_without_batch_write,
    "tenant role without table/index/*": tenant_without_table_indexes,
    "function roles without sts:TagSession": functions_without_tag_session,
    "a wrong archive prefix": wrong_archive_prefix,
    "a chat grant on the profile ARN only": chat_grant_on_profile_only,
    "dynamodb:LeadingKeys broadened to ${tenant}*": leading_keys_broadened,
    "the trust policy without TagSession": trust_without_tag_session,
    "a function removed from the tenant role's trust": function_removed_from_trust,
    "the tenant role's KMS cut to DescribeKey": tenant_kms_describe_only,
    "the chat foundation-model ARN pinned to the stack region": chat_model_pinned_to_stack_region,
    "an isolated S3 Vectors endpoint losing GetIndex": isolated_s3vectors_endpoint_without_get_index,
}
"""The twelve defects of issue 30's desk review, in its order."""

KIND_PLANTS: dict[str, Plant] = {
    "key policy: CloudWatch may not encrypt for the alarm topic": key_policy_without_cloudwatch,
    "topic policy: CloudWatch may not publish": topic_policy_without_cloudwatch,
    "Lambda permission: API Gateway may not invoke chat for /v1/sessions/*": chat_lambda_permission_removed,
    "bucket policy: the archive accepts plain HTTP": archive_bucket_policy_without_tls,
    "schedule role: the decay schedule may not invoke its function": scheduler_role_cannot_invoke,
    "service trust: the dreaming state machine's role trusts Lambda, not Step Functions": state_machine_role_trusts_lambda,
    "tenant grant: mem-${tenant}* reaches a neighbour's index": tenant_index_broadened,
}
"""One per policy kind the issue-30 plants do not already cover (identity, trust, KMS role grants, endpoint,
Region and LeadingKeys are)."""

PLANTS: dict[str, Plant] = {**ISSUE_PLANTS, **KIND_PLANTS}
