"""The AWS job path in the template (infra/constructs/job_worker.py, decision 0008): the job function runs one
job per asynchronous invoke with Lambda's longest timeout, two retries and a dead-letter queue; only the API
role may invoke it, and only it; staged requests live in an encrypted bucket that expires them, reachable by
the tenant role under its own `<tenant>/jobs/` prefix only; with `isolated`, the Lambda endpoint lets exactly
the API's invoke through."""

from __future__ import annotations

import json
from typing import Any

from infra_support import TEST_WRITE_JUDGE_MODEL, Deferred, Synthesized, as_list, policy_statements, render

job_worker = Deferred("infra.constructs.job_worker")  # aws_cdk: the jsii kernel, only where the test runs


def _function(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    logical_id = synthesized.logical_id("AWS::Lambda::Function", "JobWorkerFunction")
    return logical_id, synthesized.resources[logical_id]["Properties"]


def _staging_bucket(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::S3::Bucket", "JobsStagingBucket")


def test_the_job_function_runs_jobs_asynchronously_with_retries_and_a_dead_letter_queue(
    synthesized: Synthesized,
) -> None:
    logical_id, function = _function(synthesized)
    assert function["Handler"] == job_worker.JOB_HANDLER and function["Timeout"] == 900
    assert "DeadLetterConfig" in function
    invoke_configs = [
        c["Properties"]
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if render(c["Properties"]["FunctionName"]) == f"<{logical_id}>"
    ]
    assert [(c["MaximumRetryAttempts"], c["MaximumEventAgeInSeconds"]) for c in invoke_configs] == [
        (2, 21600)
    ]
    environment = function["Environment"]["Variables"]
    # It runs the API's routes, so it decides writes as the API does (the judge, the policy, the retention).
    api = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", "ApiFunction")]["Properties"]
    for name in (
        "AGENT_MEMORY_WRITE_JUDGE_MODEL_ID",
        "AGENT_MEMORY_POLICY",
        "AGENT_MEMORY_ERASURE_RETENTION",
    ):
        assert environment[name] == api["Environment"]["Variables"][name], name
    assert environment["AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"] == TEST_WRITE_JUDGE_MODEL
    assert render(environment["AGENT_MEMORY_JOB_STAGING_BUCKET"]) == f"<{_staging_bucket(synthesized)}>"


def test_a_job_is_declared_lost_only_after_lambda_can_no_longer_run_it(synthesized: Synthesized) -> None:
    """The API (which answers polls) and the job function agree on when an unfinished job ran nowhere: not
    before its event's maximum age plus one whole invocation, or a job still running would be failed."""
    logical_id, function = _function(synthesized)
    (invoke_config,) = [
        c["Properties"]
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if render(c["Properties"]["FunctionName"]) == f"<{logical_id}>"
    ]
    api = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", "ApiFunction")]["Properties"]
    for environment in (function["Environment"]["Variables"], api["Environment"]["Variables"]):
        lost_after = json.loads(environment["AGENT_MEMORY_JOBS"])["lost_after_seconds"]
        assert lost_after > invoke_config["MaximumEventAgeInSeconds"] + function["Timeout"]
        assert lost_after <= invoke_config["MaximumEventAgeInSeconds"] + function["Timeout"] + 600


def test_only_the_api_role_may_invoke_the_job_function(synthesized: Synthesized) -> None:
    logical_id, _ = _function(synthesized)
    api = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", "ApiFunction")]["Properties"]
    assert render(api["Environment"]["Variables"]["AGENT_MEMORY_JOB_FUNCTION"]) == f"<{logical_id}>"
    job_arn = f"<{logical_id}.Arn>"
    for role_id in synthesized.of_type("AWS::IAM::Role"):
        invokes = [
            s
            for s in policy_statements(synthesized, role_id)
            if "lambda:InvokeFunction" in as_list(s["Action"]) and job_arn in as_list(s["Resource"])
        ]
        if "ApiFunction" in role_id:
            assert [as_list(s["Resource"]) for s in invokes] == [[job_arn]]  # the unqualified ARN only
        else:
            assert invokes == [], role_id


def test_staged_requests_expire_are_encrypted_and_reachable_only_under_the_tenants_prefix(
    synthesized: Synthesized,
) -> None:
    bucket_id = _staging_bucket(synthesized)
    bucket = synthesized.resources[bucket_id]["Properties"]
    rules = bucket["LifecycleConfiguration"]["Rules"]
    assert any(r.get("ExpirationInDays") == 1 and r["Status"] == "Enabled" for r in rules)
    encryption = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    tenant_role = synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")
    staged = [
        s for s in policy_statements(synthesized, tenant_role) if s.get("Sid") == "OwnTenantJobRequests"
    ]
    assert len(staged) == 1
    assert sorted(as_list(staged[0]["Action"])) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert as_list(staged[0]["Resource"]) == [f"<{bucket_id}.Arn>/${{aws:PrincipalTag/tenant}}/jobs/*"]
    for role_id in synthesized.of_type("AWS::IAM::Role"):  # no function role reads staged requests itself
        if role_id == tenant_role:
            continue
        for statement in policy_statements(synthesized, role_id):
            assert not any(bucket_id in str(r) for r in as_list(statement.get("Resource", []))), role_id


def test_with_isolated_the_lambda_endpoint_admits_the_api_roles_invoke(
    profile_synthesized: Synthesized,
) -> None:
    endpoints = [
        e["Properties"]
        for e in profile_synthesized.of_type("AWS::EC2::VPCEndpoint").values()
        if "lambda" in str(render(e["Properties"]["ServiceName"]))
    ]
    if profile_synthesized.profile == "lean":
        assert endpoints == []  # the API is outside the VPC: no endpoint to pay for
        return
    (endpoint,) = endpoints
    (statement,) = [render(s) for s in endpoint["PolicyDocument"]["Statement"] if s["Sid"] == "SubmitJob"]
    assert statement["Action"] == "lambda:InvokeFunction" or statement["Action"] == ["lambda:InvokeFunction"]
    api_role = profile_synthesized.logical_id("AWS::IAM::Role", "ApiFunctionRole")
    assert as_list(statement["Condition"]["ArnEquals"]["aws:PrincipalArn"]) == [f"<{api_role}.Arn>"]
