"""Every AWS service a function in the VPC is granted is reachable from it, for each profile.

The IAM contract judges the calls the suites record, but those run the default (`lean`) wiring, whose only VPC
function calls no AWS API. This checks `isolated` (and `lean`) structurally: a function in the VPC (isolated
subnets, no NAT) that is granted an action of a service must have an endpoint for that service whose policy
admits its role (or, for the tenant role's data calls, the tenant role it assumes). A grant without a route is
an AccessDenied-or-timeout waiting for the first deploy (the migration's backfill start and archive were).
"""

from __future__ import annotations

from typing import Any

from infra_support import Synthesized, actions_of, as_list, policy_statements, render

ENDPOINT_SERVICE = {
    "bedrock": "bedrock-runtime",
    "s3vectors": "s3vectors",
    "sts": "sts",
    "states": "states",
    "dynamodb": "dynamodb",
    "s3": "s3",
    "lambda": "lambda",
}
"""IAM service prefix → the endpoint service name (the last part of com.amazonaws.<region>.<name>)."""

SERVICE_SIDE = {"logs", "xray", "kms", "sqs", "cloudwatch", "ec2", "s3files", "elasticfilesystem"}
"""Grants used on the function's behalf by Lambda or by the data service (logs, traces, dead letters, the ENIs,
the mount, KMS for DynamoDB/S3 Vectors encryption): no call leaves the function for them."""


def _endpoints(synthesized: Synthesized) -> dict[str, list[dict[str, Any]]]:
    """Endpoint service name → the statements of its policy."""
    found: dict[str, list[dict[str, Any]]] = {}
    for endpoint in synthesized.of_type("AWS::EC2::VPCEndpoint").values():
        props = render(endpoint["Properties"])
        name = str(props["ServiceName"]).rsplit(".", 1)[-1]
        found[name] = props.get("PolicyDocument", {}).get("Statement", [])
    return found


def _admits(statements: list[dict[str, Any]], role: str, service: str) -> bool:
    for statement in statements:
        principals = as_list(statement.get("Condition", {}).get("ArnEquals", {}).get("aws:PrincipalArn", []))
        actions = as_list(statement["Action"])
        if any(role in str(p) for p in principals) and any(a.split(":")[0] == service for a in actions):
            return True
    return False


def _tenant_role(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")


def test_every_service_a_vpc_function_is_granted_has_an_endpoint_that_admits_it(
    profile_synthesized: Synthesized,
) -> None:
    endpoints = _endpoints(profile_synthesized)
    tenant_role = _tenant_role(profile_synthesized)
    problems: list[str] = []
    in_vpc = 0
    for logical_id, function in profile_synthesized.of_type("AWS::Lambda::Function").items():
        props = function["Properties"]
        if "VpcConfig" not in props:
            continue
        in_vpc += 1
        role = render(props["Role"]).strip("<>").split(".")[0]
        own = actions_of(policy_statements(profile_synthesized, role))
        callers = [(role, own)]
        if any(a.startswith("sts:AssumeRole") for a in own):
            callers.append((tenant_role, actions_of(policy_statements(profile_synthesized, tenant_role))))
        for caller, actions in callers:
            for service in sorted({a.split(":")[0] for a in actions} - SERVICE_SIDE):
                endpoint = ENDPOINT_SERVICE.get(service)
                if endpoint is None:
                    problems.append(f"{logical_id}: {caller} is granted {service}, which no test maps")
                elif endpoint not in endpoints:
                    problems.append(
                        f"{logical_id}: {caller} is granted {service} but the VPC has no endpoint"
                    )
                elif not _admits(endpoints[endpoint], caller, service):
                    problems.append(f"{logical_id}: the {endpoint} endpoint's policy does not admit {caller}")
    assert in_vpc, "no function in the VPC: the check checked nothing"
    assert not problems, "\n".join(problems)


def test_isolated_routes_the_migration_to_step_functions_and_s3(profile_synthesized: Synthesized) -> None:
    endpoints = _endpoints(profile_synthesized)
    if profile_synthesized.profile == "lean":
        assert endpoints == {}  # the file function alone is in the VPC and calls no AWS API
        return
    assert {"states", "s3", "dynamodb"} <= set(endpoints)
    s3 = [s for s in endpoints["s3"] if "s3:PutObject" in as_list(s["Action"])]
    # the migration's archive, and the staged requests of jobs (infra/constructs/job_worker.py)
    assert sorted(str(s["Resource"]).split("Bucket", 1)[0] for s in s3) == [
        "<JobsStaging",
        "<MigrationWorkflowArchive",
    ]
