"""The template-wide gates: cdk-nag AwsSolutions, cfn-lint, nothing public, the isolated network; for every
deployment profile (`lean`, `isolated`)."""

from __future__ import annotations

import json

import pytest
from infra_support import TEST_RERANK, Synthesized, as_list, render

LINT_REGIONS = ["us-east-1", "eu-central-1"]


@pytest.fixture
def synthesized(profile_synthesized: Synthesized) -> Synthesized:
    """Every test of this module runs once per profile."""
    return profile_synthesized


def test_cdk_nag_aws_solutions_reports_no_unacknowledged_finding(synthesized: Synthesized) -> None:
    # Given the app synthesized with the AwsSolutions pack as a validation plugin
    violations = [
        f"{v['ruleName']} at {[c['constructPath'] for c in v['violatingConstructs']]}: {v['description']}"
        for report in synthesized.validation_report.get("pluginReports", [])
        for v in report.get("violations", [])
    ]
    # Then synth succeeded and no rule (error or warning) is left unacknowledged
    assert violations == [], "\n".join(violations)
    assert synthesized.synth_error is None
    assert synthesized.validation_report["pluginReports"] == [] or all(
        r["conclusion"] == "success" for r in synthesized.validation_report["pluginReports"]
    )


def test_no_unacknowledged_warning_or_error_annotations(synthesized: Synthesized) -> None:
    annotations = [
        f"{path}: {entry['data']}"
        for artifact in synthesized.manifest["artifacts"].values()
        for path, entries in (artifact.get("metadata") or {}).items()
        for entry in entries
        if entry["type"] in ("aws:cdk:warning", "aws:cdk:error")
    ]
    assert annotations == [], "\n".join(annotations)


def test_every_acknowledgement_names_one_rule_and_gives_a_specific_reason(synthesized: Synthesized) -> None:
    # Given every Validations acknowledgement in the app
    assert synthesized.acknowledgments, "the app acknowledges known findings; none found means the scan broke"
    for path, rule, reason in synthesized.acknowledgments:
        # Then none is a blanket pack-wide suppression and each explains itself in a sentence
        assert rule.split("::")[-1] not in ("AwsSolutions", "*"), (path, rule)
        assert len(reason) >= 40, (path, rule, reason)
        assert rule.split("::")[-1] not in reason, (path, rule, reason)
    # And IAM5 wildcards are acknowledged one finding at a time, never for the whole rule
    for path, rule, _ in synthesized.acknowledgments:
        if "AwsSolutions-IAM5" in rule:
            assert "[" in rule, (path, rule)


def test_cfn_lint_finds_no_error(synthesized: Synthesized) -> None:
    """Every region at once: cfn-lint decodes the template and loads its rules once, then checks each region."""
    from cfnlint.api import lint

    matches = lint(json.dumps(synthesized.template), regions=LINT_REGIONS)
    errors = [f"{m.rule.id} {m.path}: {m.message}" for m in matches if m.rule.id.startswith("E")]
    assert errors == [], "\n".join(errors)


def test_no_security_group_accepts_traffic_from_anywhere(synthesized: Synthesized) -> None:
    rules = [
        rule
        for group in synthesized.of_type("AWS::EC2::SecurityGroup").values()
        for rule in group["Properties"].get("SecurityGroupIngress", [])
    ] + [r["Properties"] for r in synthesized.of_type("AWS::EC2::SecurityGroupIngress").values()]
    assert rules, "expected some ingress rules (endpoints, mount targets)"
    for rule in rules:
        assert rule.get("CidrIp") not in ("0.0.0.0/0",), rule
        assert rule.get("CidrIpv6") not in ("::/0",), rule


def test_nothing_is_publicly_reachable_but_the_authenticated_api(synthesized: Synthesized) -> None:
    # Buckets: all public access blocked
    for bucket in synthesized.of_type("AWS::S3::Bucket").values():
        assert set(bucket["Properties"]["PublicAccessBlockConfiguration"].values()) == {True}
    # Lambda: no function URL, and every invoke permission is for a service, from a specific source
    assert not synthesized.of_type("AWS::Lambda::Url")
    for permission in synthesized.of_type("AWS::Lambda::Permission").values():
        props = permission["Properties"]
        assert props["Principal"].endswith(".amazonaws.com"), props
        assert "SourceArn" in props, props
    # Resource policies: no statement allows "*" as principal, except VPC endpoint policies, which name
    # their callers with aws:PrincipalArn instead (the form AWS documents for gateway endpoints)
    for resource in synthesized.resources.values():
        for key in ("PolicyDocument", "KeyPolicy"):
            document = resource["Properties"].get(key) if "Properties" in resource else None
            for statement in (document or {}).get("Statement", []):
                if statement["Effect"] == "Allow":
                    principal = render(statement.get("Principal", {}))
                    if resource["Type"] == "AWS::EC2::VPCEndpoint":
                        assert statement["Condition"]["ArnEquals"]["aws:PrincipalArn"], statement
                        continue
                    assert principal not in ("*", {"AWS": "*"}), (resource["Type"], statement)
    # Network: no internet gateway and no NAT gateway by default
    assert not synthesized.of_type("AWS::EC2::InternetGateway")
    assert not synthesized.of_type("AWS::EC2::NatGateway")


def test_functions_reach_aws_through_vpc_endpoints(synthesized: Synthesized) -> None:
    endpoints = [e["Properties"] for e in synthesized.of_type("AWS::EC2::VPCEndpoint").values()]
    names = {json.dumps(render(e["ServiceName"])): e for e in endpoints}
    by_service = {}
    for rendered, endpoint in names.items():
        service = rendered.strip('"').rsplit(".", 1)[-1]
        by_service[service] = endpoint
    (flow_log,) = synthesized.of_type("AWS::EC2::FlowLog").values()
    assert flow_log["Properties"]["LogDestinationType"] == "s3"
    if synthesized.profile == "lean":
        # Only the file function is in the VPC and it calls no AWS API: no endpoint at all, not even the free
        # DynamoDB gateway (nothing in the VPC would use it)
        assert by_service == {}
        return
    # S3 only through its gateway endpoint, for the migration's archive (memory files go over NFS to the S3
    # Files mount targets, never through it)
    assert by_service["s3"]["VpcEndpointType"] == "Gateway"
    assert by_service["dynamodb"]["VpcEndpointType"] == "Gateway"
    for service in ("bedrock-runtime", "s3vectors", "sts"):
        assert by_service[service]["VpcEndpointType"] == "Interface", service
        assert by_service[service]["PrivateDnsEnabled"] is True, service
    # Interface endpoints in every AZ with `isolated`; the gateway endpoint serves the route tables of every
    # function subnet
    subnets = sorted(synthesized.of_type("AWS::EC2::Subnet"))
    for service, endpoint in by_service.items():
        if endpoint["VpcEndpointType"] == "Interface":
            assert len(endpoint["SubnetIds"]) == len(subnets), service
            assert {s["Ref"] for s in endpoint["SubnetIds"]} <= set(subnets), service
    assert len(by_service["dynamodb"]["RouteTableIds"]) == len(subnets)


def test_only_functions_that_mount_memory_files_are_in_the_vpc_with_lean(synthesized: Synthesized) -> None:
    from infra_support import MOUNTING_FUNCTIONS

    functions = {
        logical_id: f["Properties"]
        for logical_id, f in synthesized.of_type("AWS::Lambda::Function").items()
        if f["Properties"].get("Handler", "").startswith("agent_memory.")
    }
    # `lean` adds the file function, the only one in its VPC (both count the embedding backfill's function,
    # the console's static page and the job function)
    assert len(functions) == {"lean": 9, "isolated": 8}[synthesized.profile]
    for logical_id, props in functions.items():
        mounts = "FileSystemConfigs" in props
        in_vpc = "VpcConfig" in props
        # a mount needs the VPC (NFS to the mount targets); the decay job and the authorizer touch no file
        assert mounts == any(n in logical_id for n in MOUNTING_FUNCTIONS[synthesized.profile]), logical_id
        assert in_vpc == (mounts or synthesized.profile == "isolated"), logical_id
        role = synthesized.resources[props["Role"]["Fn::GetAtt"][0]]["Properties"]
        vpc_policy = "AWSLambdaVPCAccessExecutionRole" in json.dumps(role.get("ManagedPolicyArns", []))
        assert vpc_policy == in_vpc, logical_id


def _endpoint_policies(synthesized: Synthesized) -> dict[str, list[dict]]:
    """Service (`dynamodb`, `sts`, ...) → the rendered statements of its endpoint's policy."""
    policies = {}
    for endpoint in synthesized.of_type("AWS::EC2::VPCEndpoint").values():
        service = json.dumps(render(endpoint["Properties"]["ServiceName"])).strip('"').rsplit(".", 1)[-1]
        policies[service] = render(endpoint["Properties"].get("PolicyDocument", {}).get("Statement", []))
    return policies


def test_every_vpc_endpoint_lets_through_only_the_calls_the_functions_make(synthesized: Synthesized) -> None:
    # Given every endpoint's policy (without one, AWS lets any call by anyone through the endpoint)
    policies = _endpoint_policies(synthesized)
    if synthesized.profile == "lean":
        assert policies == {}  # no endpoint (test_functions_reach_aws_through_vpc_endpoints)
        return
    # (bedrock-agent-runtime: the test deployment enables recall's Bedrock reranker)
    assert set(policies) == {
        "dynamodb",
        "s3",
        "bedrock-runtime",
        "bedrock-agent-runtime",
        "s3vectors",
        "sts",
        "states",
        "lambda",
    }
    roles = {f"<{logical_id}.Arn>" for logical_id in synthesized.of_type("AWS::IAM::Role")}

    def role(fragment: str) -> str:
        return f"<{synthesized.logical_id('AWS::IAM::Role', fragment)}.Arn>"

    def callers(statement: dict) -> set[str]:
        return set(as_list(statement["Condition"]["ArnEquals"]["aws:PrincipalArn"]))

    # Then each endpoint has a policy whose statements allow this stack's roles only, and name their actions
    # (of that service) and resources: never `*`, except bedrock:Rerank's, which has no resource type (the
    # Service Authorization Reference), its model bounded by InvokeModel on one ARN (asserted below)
    for service, statements in policies.items():
        assert statements, service
        for statement in statements:
            assert statement["Effect"] == "Allow" and statement["Principal"] == "*", statement
            assert callers(statement) and callers(statement) <= roles, statement
            if as_list(statement["Action"]) != ["bedrock:Rerank"]:
                assert "*" not in as_list(statement["Resource"]), statement
            prefix = "bedrock" if service == "bedrock-agent-runtime" else service.removesuffix("-runtime")
            assert all(a.startswith(f"{prefix}:") and "*" not in a for a in as_list(statement["Action"]))
    by_sid = {service: {s["Sid"]: s for s in statements} for service, statements in policies.items()}

    # DynamoDB: tenant sessions on the memory table, idempotency records of the API and chat functions, and
    # the authorizer's key lookup
    memory, idempotency, api_keys = (
        f"<{synthesized.logical_id('AWS::DynamoDB::Table', name)}.Arn>"
        for name in ("Memory", "Idemp", "ApiKeys")
    )
    dynamodb = by_sid["dynamodb"]
    # (the authorizer's key lookup goes through the endpoint only when the authorizer is in the VPC)
    authorizer_in_vpc = synthesized.profile == "isolated"
    assert set(dynamodb) == {"TenantItems", "IdempotencyRecords", "IdempotencyPurge"} | (
        {"ApiKeyLookup"} if authorizer_in_vpc else set()
    )
    # A purge scans the idempotency records (keyed by a hash, not by tenant) and deletes those naming purged
    # content: inline in the API function, or in the purge workflow's steps on the dreaming function.
    purge = dynamodb["IdempotencyPurge"]
    assert callers(purge) == {role("ApiFunctionRole"), role("DreamingWorkflowDreamingFunctionRole")}
    assert (sorted(as_list(purge["Action"])), purge["Resource"]) == (
        ["dynamodb:DeleteItem", "dynamodb:Scan"],
        idempotency,
    )
    assert callers(dynamodb["TenantItems"]) == {role("TenantAccessRole")}
    assert sorted(as_list(dynamodb["TenantItems"]["Resource"])) == [memory, f"{memory}/index/*"]
    assert not {a for a in as_list(dynamodb["TenantItems"]["Action"]) if "Scan" in a or "PartiQL" in a}
    assert callers(dynamodb["IdempotencyRecords"]) == {role("ApiFunctionRole"), role("ChatFunctionRole")}
    assert dynamodb["IdempotencyRecords"]["Resource"] == idempotency
    if authorizer_in_vpc:
        assert callers(dynamodb["ApiKeyLookup"]) == {role("AuthorizerFunctionRole")}
        assert (dynamodb["ApiKeyLookup"]["Action"], dynamodb["ApiKeyLookup"]["Resource"]) == (
            "dynamodb:GetItem",
            api_keys,
        )
    # S3: tenant sessions on the migration archive bucket's objects, and its listing (a purge's; the IAM
    # policy narrows it to the tenant's prefix)
    archive = by_sid["s3"]["TenantMigrationArchive"]
    assert set(by_sid["s3"]) == {
        "TenantMigrationArchive",
        "TenantMigrationArchiveListing",
        "TenantJobRequests",
    }
    staged = by_sid["s3"]["TenantJobRequests"]  # requests of jobs too large for their item (the job path)
    assert callers(staged) == {role("TenantAccessRole")} and staged["Resource"].startswith(
        "<JobsStagingBucket"
    )
    assert callers(archive) == {role("TenantAccessRole")}
    assert archive["Resource"].startswith("<MigrationWorkflowArchiveBucket") and archive["Resource"].endswith(
        "/*"
    )
    listing = by_sid["s3"]["TenantMigrationArchiveListing"]
    assert callers(listing) == {role("TenantAccessRole")} and listing["Action"] == "s3:ListBucket"
    assert (
        listing["Resource"].startswith("<MigrationWorkflowArchiveBucket") and "/" not in listing["Resource"]
    )
    # S3 Vectors: tenant sessions on the `mem-` indexes; STS: the functions obtain tenant sessions only
    assert callers(by_sid["s3vectors"]["TenantIndexes"]) == {role("TenantAccessRole")}
    assert by_sid["s3vectors"]["TenantIndexes"]["Resource"].endswith(".VectorBucketArn>/index/mem-*")
    sts = by_sid["sts"]["TenantCredentials"]
    assert sorted(as_list(sts["Action"])) == ["sts:AssumeRole", "sts:TagSession"]
    assert sts["Resource"] == role("TenantAccessRole") and role("AuthorizerFunctionRole") not in callers(sts)
    # Only roles of functions in the VPC are named (the decay job's calls with `lean` never pass an endpoint)
    assert (role("DecayJobFunctionRole") in callers(sts)) == (synthesized.profile == "isolated")
    # Bedrock: the embedding model for every data function, the chat and extraction models for theirs
    bedrock = by_sid["bedrock-runtime"]
    assert set(bedrock) == {
        "EmbeddingModel",
        "ChatModels",
        "ChatTokenCounting",
        "DreamingExtractionModels",
        "WriteJudgeModels",  # the test deployment configures the optional LLM write judge
    }
    assert callers(bedrock["ChatModels"]) == {role("ChatFunctionRole")}
    assert callers(bedrock["DreamingExtractionModels"]) == {role("DreamingFunctionRole")}
    assert callers(bedrock["WriteJudgeModels"]) == {role("ApiFunctionRole"), role("JobWorkerFunctionRole")}
    for statement in bedrock.values():
        assert all(
            "foundation-model/" in r or "inference-profile/" in r for r in as_list(statement["Resource"])
        )
    # Bedrock's agent runtime: recall's reranker, the API function's only (it alone serves recall): Rerank, and
    # InvokeModel on the configured rerank model and nothing else
    rerank = by_sid["bedrock-agent-runtime"]
    assert set(rerank) == {"RerankApi", "RerankModel"}
    assert callers(rerank["RerankApi"]) == callers(rerank["RerankModel"]) == {role("ApiFunctionRole")}
    assert (rerank["RerankApi"]["Action"], rerank["RerankApi"]["Resource"]) == ("bedrock:Rerank", "*")
    assert rerank["RerankModel"]["Action"] == "bedrock:InvokeModel"
    assert rerank["RerankModel"]["Resource"].endswith(f"::foundation-model/{TEST_RERANK['model_id']}")
    # Step Functions (on-demand dreaming): the API function may start the dreaming state machine, nothing else
    (machine,) = [
        m for m in synthesized.of_type("AWS::StepFunctions::StateMachine") if m.startswith("Dreaming")
    ]
    start = by_sid["states"]["StartDreaming"]
    assert callers(start) == {role("ApiFunctionRole")}
    assert (start["Action"], start["Resource"]) == ("states:StartExecution", f"<{machine}>")
    # ... and the purge workflow (a purge above the API's inline limit)
    (purge_machine,) = [
        m for m in synthesized.of_type("AWS::StepFunctions::StateMachine") if m.startswith("PurgeWorkflow")
    ]
    start_purge = by_sid["states"]["StartPurge"]
    assert callers(start_purge) == {role("ApiFunctionRole")}
    assert (start_purge["Action"], start_purge["Resource"]) == ("states:StartExecution", f"<{purge_machine}>")
    # Lambda: the API function hands jobs to the job function, nothing else goes through this endpoint
    assert set(by_sid["lambda"]) == {"SubmitJob"}
    submit = by_sid["lambda"]["SubmitJob"]
    job_function = synthesized.logical_id("AWS::Lambda::Function", "JobWorkerFunction")
    assert callers(submit) == {role("ApiFunctionRole")}
    assert (submit["Action"], submit["Resource"]) == ("lambda:InvokeFunction", f"<{job_function}.Arn>")
