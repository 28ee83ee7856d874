"""Deploy-time safety of the template: what survives `cdk destroy` never blocks the next deploy, and nothing
changes account-wide settings unless asked to."""

from __future__ import annotations

from typing import Any

from infra_support import ROOT, Deferred, Synthesized

from infra.config import CONTEXT_KEY, ApiConfig, DeploymentConfig, load_cdk_json_context

cdk = Deferred("aws_cdk")  # the jsii kernel: started by the worker that runs these tests, not at collection
assertions = Deferred("aws_cdk.assertions")

RETAINED = ("Retain", "RetainExceptOnCreate")

NAME_SCOPES = {
    "AWS::S3Vectors::Index": ("VectorBucketArn", "VectorBucketName"),
    "AWS::IAM::Policy": ("Roles", "Users", "Groups"),
}
"""Names that are unique only inside a parent resource (an index in its vector bucket, an inline policy on
its role): fixed names there are fine when every parent has a name CloudFormation generated."""


def _name_properties(resource: dict[str, Any]) -> dict[str, Any]:
    """The properties that set a resource's physical name: `Name`, or `<Type>Name` (`BucketName` of
    AWS::S3::Bucket, `RoleName` of AWS::IAM::Role, `IndexName` of AWS::S3Vectors::Index, ...)."""
    kind = resource["Type"].rsplit("::", 1)[-1]
    properties = resource.get("Properties", {})
    return {key: properties[key] for key in ("Name", f"{kind}Name") if key in properties}


def _referenced_ids(value: Any) -> list[str]:
    """Logical ids a property refers to with Ref or Fn::GetAtt."""
    if isinstance(value, list):
        return [found for item in value for found in _referenced_ids(item)]
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            return [value["Ref"]]
        if set(value) == {"Fn::GetAtt"}:
            return [value["Fn::GetAtt"][0]]
        return [found for item in value.values() for found in _referenced_ids(item)]
    return []


def _has_fixed_name(resources: dict[str, dict[str, Any]], logical_id: str) -> bool:
    resource = resources[logical_id]
    if not _name_properties(resource):
        return False
    scopes = NAME_SCOPES.get(resource["Type"])
    if scopes is None:
        return True
    parents = [
        p for key in scopes for p in _referenced_ids(resource["Properties"].get(key)) if p in resources
    ]
    # Scoped by parents of this template: fixed only if a parent's own name is fixed (or there is no parent)
    return not parents or any(_has_fixed_name(resources, parent) for parent in parents)


def test_no_retained_resource_has_a_fixed_physical_name(synthesized: Synthesized) -> None:
    # Given every resource that outlives the stack (retain_data is on, as shipped) or a replacement
    retained = {
        logical_id: resource
        for logical_id, resource in synthesized.resources.items()
        if resource.get("DeletionPolicy") in RETAINED or resource.get("UpdateReplacePolicy") in RETAINED
    }
    assert len(retained) > 10, "expected the data stores, key and log groups to be retained"

    # Then none has a name of its own: after `cdk destroy` the retained copy would still hold that name and
    # the next deploy would fail creating the resource again
    fixed = {
        logical_id: _name_properties(resource)
        for logical_id, resource in retained.items()
        if _has_fixed_name(synthesized.resources, logical_id)
    }
    assert fixed == {}, f"retained resources with a fixed physical name: {fixed}"
    # And the schedule group, which is named (readably, <stack>-jobs), is deleted with the stack
    ((group_id, group),) = synthesized.of_type("AWS::Scheduler::ScheduleGroup").items()
    assert group["Properties"]["Name"] == f"{synthesized.stack_name}-jobs"
    assert group["DeletionPolicy"] == "Delete" and group["UpdateReplacePolicy"] == "Delete", group_id


def test_name_walk_treats_names_scoped_by_a_generated_parent_as_generated() -> None:
    # Given an index with a fixed name in a bucket without one, and a policy on a role with a fixed name
    resources = {
        "Bucket": {"Type": "AWS::S3Vectors::VectorBucket", "Properties": {}},
        "Index": {
            "Type": "AWS::S3Vectors::Index",
            "Properties": {"IndexName": "mem-acme", "VectorBucketArn": {"Fn::GetAtt": ["Bucket", "Arn"]}},
        },
        "NamedRole": {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "fixed"}},
        "Policy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {"PolicyName": "p", "Roles": [{"Ref": "NamedRole"}]},
        },
        "Group": {"Type": "AWS::Scheduler::ScheduleGroup", "Properties": {"Name": "AgentMemory-jobs"}},
    }
    # Then only the names that are unique account- or parent-wide count as fixed
    assert not _has_fixed_name(resources, "Bucket") and not _has_fixed_name(resources, "Index")
    assert _has_fixed_name(resources, "NamedRole") and _has_fixed_name(resources, "Policy")
    assert _has_fixed_name(resources, "Group")


def _template_with(api: dict[str, Any]) -> dict[str, Any]:
    from app import build_app

    context = load_cdk_json_context(ROOT / "cdk.json")
    context[CONTEXT_KEY] = {**context[CONTEXT_KEY], "api": {**context[CONTEXT_KEY]["api"], **api}}
    app = cdk.App(context={**context, "aws:cdk:bundling-stacks": []})
    build_app(app, nag=False)
    (stack,) = [c for c in app.node.children if isinstance(c, cdk.Stack)]
    return assertions.Template.from_stack(stack).to_json()


def test_the_account_level_api_gateway_logging_role_is_only_set_when_asked_for(
    synthesized: Synthesized,
) -> None:
    # Given the default configuration (and the shipped cdk.json, which keeps it)
    assert ApiConfig().create_cloudwatch_role is False
    shipped = load_cdk_json_context(ROOT / "cdk.json")[CONTEXT_KEY]
    assert DeploymentConfig.from_context(shipped).api.create_cloudwatch_role is False
    # Then the stack leaves the Region's one API Gateway account setting (and its role) alone
    assert not synthesized.of_type("AWS::ApiGateway::Account")
    assert not [r for r in synthesized.of_type("AWS::IAM::Role").values() if _pushes_api_logs(r)]

    # When a deployment opts in, Then it creates the role and sets it, and both outlive the stack (other
    # APIs in the Region log through the same setting)
    template = _template_with({"create_cloudwatch_role": True})
    resources = template["Resources"]
    (account,) = [r for r in resources.values() if r["Type"] == "AWS::ApiGateway::Account"]
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    assert _pushes_api_logs(resources[role_id])
    assert account["DeletionPolicy"] == resources[role_id]["DeletionPolicy"] == "Retain"


def _pushes_api_logs(role: dict[str, Any]) -> bool:
    return "AmazonAPIGatewayPushToCloudWatchLogs" in str(role.get("Properties", {}).get("ManagedPolicyArns"))
