"""The IAM contract on the synthesized template itself: what the recorded calls of the other suites cannot
show (another tenant's resources; the calls Step Functions and EventBridge Scheduler make on our behalf).

The recorded calls of every suite are judged at the end of the run (tests/iam/plugin.py); these tests use the
same resolver and evaluator on hand-made requests.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from infra_support import Synthesized

from tests.iam.contract import BINDING, bound_name
from tests.iam.policy import Request, evaluate
from tests.iam.reference import ACCOUNT, needs_for
from tests.iam.template import ResolvedTemplate, resolve_template

REGION = "us-east-1"
BUCKET = f"arn:aws:s3vectors:{REGION}:{ACCOUNT}:bucket/{BINDING['AGENT_MEMORY_VECTOR_BUCKET']}"
TABLE = BINDING["AGENT_MEMORY_TABLE"]


@pytest.fixture(scope="module")
def resolved(synthesized: Synthesized) -> ResolvedTemplate:
    return resolve_template(synthesized.template, REGION, BINDING)


def _tenant_allows(
    resolved: ResolvedTemplate, tenant: str, service: str, operation: str, params: dict
) -> bool:
    statements = resolved.role_statements(resolved.tenant_role())
    needs = needs_for(service, operation, params, REGION, resolved.key_schemas())
    context = {"aws:principaltag/tenant": [tenant]}
    return all(
        evaluate(statements, Request(n.action, n.resource, {**n.context, **context})).allowed for n in needs
    )


@pytest.mark.parametrize(
    "operation, params",
    [
        ("GetIndex", {}),
        ("QueryVectors", {"topK": 5}),
        ("PutVectors", {"vectors": []}),
        ("DeleteVectors", {"keys": ["k"]}),
        ("UpdateMetadataConfiguration", {"add": {}}),
    ],
)
def test_a_tenant_session_reaches_its_own_index_and_never_another(
    resolved: ResolvedTemplate, operation: str, params: dict
) -> None:
    own = {"vectorBucketName": BINDING["AGENT_MEMORY_VECTOR_BUCKET"], "indexName": "mem-acme", **params}
    other = {**own, "indexName": "mem-globex-eu"}
    assert _tenant_allows(resolved, "acme", "s3vectors", operation, own)
    assert not _tenant_allows(resolved, "acme", "s3vectors", operation, other)


def test_a_tenant_session_gets_no_index_outside_its_prefix(resolved: ResolvedTemplate) -> None:
    """`kw-<tenant>` and any other name: only `mem-<tenant>` exists in this design."""
    for name in ("kw-acme", "acme", "mem-acme-2"):
        params = {"vectorBucketName": BINDING["AGENT_MEMORY_VECTOR_BUCKET"], "indexName": name, "topK": 1}
        assert not _tenant_allows(resolved, "acme", "s3vectors", "QueryVectors", params), name


@pytest.mark.parametrize("owner, allowed", [("acme", True), ("globex-eu", False)])
def test_a_tenant_session_reads_and_writes_only_its_own_rows(
    resolved: ResolvedTemplate, owner: str, allowed: bool
) -> None:
    key = {"pk": {"S": f"{owner}#REC#r1"}, "sk": {"S": "META"}}
    assert (
        _tenant_allows(resolved, "acme", "dynamodb", "GetItem", {"TableName": TABLE, "Key": key}) is allowed
    )
    write = {"TransactItems": [{"Put": {"TableName": TABLE, "Item": key}}]}
    assert _tenant_allows(resolved, "acme", "dynamodb", "TransactWriteItems", write) is allowed


@pytest.mark.parametrize("index", ["gsi1", "gsi2", "gsi3"])
@pytest.mark.parametrize("owner, allowed", [("acme", True), ("globex-eu", False)])
def test_a_tenant_session_queries_only_its_own_gsi_partitions(
    resolved: ResolvedTemplate, index: str, owner: str, allowed: bool
) -> None:
    assert index in resolved.key_schemas()[TABLE], "the template's table has this GSI"
    partition = resolved.key_schemas()[TABLE][index]  # gsi3 (the tree index) shares gsi2's partition key
    query = {
        "TableName": TABLE,
        "IndexName": index,
        "KeyConditionExpression": f"{partition} = :p",
        "ExpressionAttributeValues": {":p": {"S": f"{owner}#REC"}},
    }
    assert _tenant_allows(resolved, "acme", "dynamodb", "Query", query) is allowed


@pytest.mark.parametrize(
    "prefix, allowed",
    [("acme/", True), ("acme/mig_1/", True), ("globex/", False), ("", False), ("acme", False)],
)
def test_a_tenant_session_lists_only_its_own_archive_prefix(
    resolved: ResolvedTemplate, prefix: str, allowed: bool
) -> None:
    """The purge lists the tenant's embedding-migration archive parts (domain/erasure/archives.py)."""
    request = {"Bucket": BINDING["AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"], "Prefix": prefix}
    assert _tenant_allows(resolved, "acme", "s3", "ListObjectsV2", request) is allowed


def test_a_tenant_session_cannot_scan(resolved: ResolvedTemplate) -> None:
    """A Scan names no partition key, so ForAllValues on LeadingKeys would pass: Scan must not be granted."""
    assert not _tenant_allows(resolved, "acme", "dynamodb", "Scan", {"TableName": TABLE})


def test_only_the_data_functions_may_assume_the_tenant_role_and_only_with_a_tenant_tag(
    resolved: ResolvedTemplate,
) -> None:
    roles = resolved.function_roles()
    tenant_role = resolved.tenant_role()
    role_arn = resolved.get_att(tenant_role, "Arn")
    tagged = {"RoleArn": role_arn, "Tags": [{"Key": "tenant", "Value": "acme"}]}
    untagged = {"RoleArn": role_arn}
    trust = resolved.resolve(resolved.resources[tenant_role]["Properties"]["AssumeRolePolicyDocument"])
    trusted = {
        p
        for s in trust["Statement"]
        for p in (
            s["Principal"]["AWS"] if isinstance(s["Principal"]["AWS"], list) else [s["Principal"]["AWS"]]
        )
    }
    for function, role in roles.items():
        statements = resolved.role_statements(role)
        allowed = all(
            evaluate(statements, Request(n.action, n.resource, n.context)).allowed
            for n in needs_for("sts", "AssumeRole", tagged, REGION, {})
        )
        role_trusted = resolved.get_att(role, "Arn") in trusted
        # the authorizer reads API keys with its own role only; the file and console functions make no AWS
        # call at all
        expected = function not in ("authorizer", "files", "console")
        assert allowed is expected and role_trusted is expected, function
        assert not evaluate(statements, Request("sts:AssumeRole", role_arn, {})).allowed, function
        assert untagged["RoleArn"] == role_arn


def _state_machine_tasks(resolved: ResolvedTemplate) -> list[tuple[str, str, dict[str, Any]]]:
    """(state machine logical id, state name, task) for every Task state, recursively through Map/Parallel."""
    found = []
    for logical, resource in resolved.resources.items():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        definition = json.loads(resolved.resolve(resource["Properties"]["DefinitionString"]))

        def walk(states: dict[str, Any], logical: str = logical) -> None:
            for name, state in states.items():
                if state["Type"] == "Task":
                    found.append((logical, name, state))
                for branch in [
                    state.get("ItemProcessor") or state.get("Iterator"),
                    *state.get("Branches", []),
                ]:
                    if branch:
                        walk(branch["States"])

        walk(definition["States"])
    return found


def test_the_state_machine_role_may_invoke_every_function_its_definition_names(
    resolved: ResolvedTemplate,
) -> None:
    tasks = _state_machine_tasks(resolved)
    assert tasks, "the dreaming workflow has Task states"
    for logical, name, task in tasks:
        role = resolved.resources[logical]["Properties"]["RoleArn"]["Fn::GetAtt"][0]
        statements = resolved.role_statements(role)
        assert re.fullmatch(r"arn:aws[-a-z]*:states:::lambda:invoke", task["Resource"]), name
        function = task["Parameters"]["FunctionName"]
        decision = evaluate(statements, Request("lambda:InvokeFunction", function))
        assert decision.allowed, f"{name}: {role} may not invoke {function}"


def test_every_schedule_role_may_start_its_target_and_use_its_dead_letter_queue(
    resolved: ResolvedTemplate,
) -> None:
    schedules = [r for r in resolved.resources.values() if r["Type"] == "AWS::Scheduler::Schedule"]
    assert schedules
    for schedule in schedules:
        target = schedule["Properties"]["Target"]
        role = target["RoleArn"]["Fn::GetAtt"][0]
        statements = resolved.role_statements(role)
        arn = resolved.resolve(target["Arn"])
        action = "states:StartExecution" if ":states:" in arn else "lambda:InvokeFunction"
        assert evaluate(statements, Request(action, arn)).allowed, f"{role}: {action} on {arn}"
        if "DeadLetterConfig" in target:
            queue = resolved.resolve(target["DeadLetterConfig"]["Arn"])
            assert evaluate(statements, Request("sqs:SendMessage", queue)).allowed, f"{role}: DLQ {queue}"


MOUNTING = {"lean": {"files"}, "isolated": {"api", "job_worker", "chat", "dreaming"}}
"""Functions that mount S3 Files, per profile: in the VPC with every profile; the others only with `isolated`."""
FILE_WORKERS = {"api", "job_worker", "chat", "dreaming"}


def test_only_the_file_workers_may_invoke_the_file_function_and_only_its_latest_version(
    resolved: ResolvedTemplate,
) -> None:
    """`lean`: API, chat and dreaming reach the memory files by invoking the file function by name (its
    unqualified ARN, i.e. $LATEST); no other role may invoke it, and no role any version or alias of it."""
    roles = resolved.function_roles()
    assert set(roles) == {
        "api",
        "authorizer",
        "chat",
        "console",
        "jobs",
        "job_worker",
        "dreaming",
        "files",
        "migration",
    }
    file_function = BINDING["AGENT_MEMORY_FILE_FUNCTION"]
    for function, role in roles.items():
        statements = resolved.role_statements(role)
        by_name = needs_for("lambda", "Invoke", {"FunctionName": file_function}, REGION, {})
        assert [n.action for n in by_name] == ["lambda:InvokeFunction"]
        allowed = all(evaluate(statements, Request(n.action, n.resource, n.context)).allowed for n in by_name)
        assert allowed is (function in FILE_WORKERS), function
        qualified = needs_for(
            "lambda", "Invoke", {"FunctionName": file_function, "Qualifier": "1"}, REGION, {}
        )
        assert not evaluate(statements, Request(qualified[0].action, qualified[0].resource)).allowed, function
        other = needs_for("lambda", "Invoke", {"FunctionName": "AnotherFunction"}, REGION, {})
        assert not evaluate(statements, Request(other[0].action, other[0].resource)).allowed, function


def test_every_function_reaches_aws_only_through_endpoints_that_admit_its_own_calls(
    profile_synthesized: Synthesized,
) -> None:
    """No NAT: each call from a function in the VPC leaves through the service's endpoint, reachable from every
    subnet the function runs in, whose policy must let it through — and must not let the authorizer (which has
    no business with tenant credentials) assume the tenant role. Functions outside the VPC (`lean`: the
    authorizer and the decay job) reach AWS over Lambda's own network, and no endpoint policy names them."""
    resolved = resolve_template(profile_synthesized.template, REGION, BINDING)
    assert not resolved.has_nat()
    in_vpc = resolved.functions_in_vpc()
    lean = profile_synthesized.profile == "lean"
    assert in_vpc == (MOUNTING["lean"] if lean else set(resolved.function_roles()))
    endpoints = resolved.endpoint_policies()
    if lean:
        # The file function alone is in the VPC and calls no AWS API: no endpoint, and a role without any
        # AWS data grant (only the mount, logs and traces)
        assert endpoints == {}
        statements = resolved.role_statements(resolved.function_roles()["files"])
        services = {
            a.split(":")[0]
            for s in statements
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        }
        assert services <= {"s3files", "logs", "xray"}, services
        return
    reach = resolved.endpoint_reach()
    for function, subnets in resolved.function_subnets().items():
        for endpoint in endpoints:
            assert subnets <= reach[endpoint], (function, endpoint)
    tenant_role_arn = resolved.get_att(resolved.tenant_role(), "Arn")
    sts = endpoints["sts"]
    for function, role in resolved.function_roles().items():
        request = Request(
            "sts:AssumeRole",
            tenant_role_arn,
            {"aws:principalarn": [resolved.get_att(role, "Arn")], "aws:requesttag/tenant": ["acme"]},
        )
        expected = function not in ("authorizer", "console") and function in in_vpc
        assert evaluate(sts, request, resource_policy=True).allowed is expected, function
    index = f"{BUCKET}/index/mem-acme"
    tenant = {"aws:principalarn": [tenant_role_arn]}
    assert evaluate(
        endpoints["s3vectors"], Request("s3vectors:QueryVectors", index, tenant), resource_policy=True
    ).allowed
    api_role = resolved.get_att(resolved.function_roles()["api"], "Arn")
    as_api = {"aws:principalarn": [api_role]}
    assert not evaluate(
        endpoints["s3vectors"], Request("s3vectors:QueryVectors", index, as_api), resource_policy=True
    ).allowed, "a function's own role never reaches tenant vectors, even through the endpoint"


def test_the_contract_reports_an_endpoint_a_function_cannot_reach(profile_synthesized: Synthesized) -> None:
    """The reachability half of tests/iam/contract.py: an endpoint whose security group does not admit the
    functions' subnets is reported, even though its policy would allow the call. With `lean` there is no
    endpoint: any AWS call the file function (alone in the VPC) would make is reported as unreachable."""
    import copy

    from tests.iam.contract import judge

    synthesized = profile_synthesized
    if synthesized.profile == "lean":
        call = {
            "service": "sts",
            "operation": "AssumeRole",
            "params": {"RoleArn": "x", "RoleSessionName": "s", "Tags": [{"Key": "tenant", "Value": "acme"}]},
            "region": REGION,
            "principal": {"kind": "function", "function": "files", "where": "here"},
            "test": "t",
        }
        _, problems = judge([call], resolve_template(synthesized.template, REGION, BINDING))
        assert any(p.startswith("NO ENDPOINT: sts:AssumeRole") for p in problems), problems
        return
    template = copy.deepcopy(synthesized.template)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::EC2::SecurityGroup" and "Interface VPC endpoints" in str(
            resource["Properties"]["GroupDescription"]
        ):
            resource["Properties"]["SecurityGroupIngress"] = []
    call = {
        "service": "sts",
        "operation": "AssumeRole",
        "params": {"RoleArn": "x", "RoleSessionName": "s", "Tags": [{"Key": "tenant", "Value": "acme"}]},
        "region": REGION,
        "principal": {"kind": "function", "function": "api", "where": "here"},
        "test": "t",
    }
    _, problems = judge([call], resolve_template(template, REGION, BINDING))
    assert any(p.startswith("UNREACHABLE: sts:AssumeRole") for p in problems), problems
    _, problems = judge([call], resolve_template(synthesized.template, REGION, BINDING))
    assert not any(p.startswith("UNREACHABLE") for p in problems), problems


# What Amazon S3 Files does with the file system's role (the S3 Files prerequisites, "IAM role for accessing
# your bucket from the file system"): read and write the bucket's objects and versions, list the bucket, use
# the bucket's KMS key (SSE-KMS), and manage the EventBridge rules it creates for synchronization.
S3_FILES_CALLS = [
    ("s3:ListBucket", "{bucket}", {}),
    ("s3:ListBucketVersions", "{bucket}", {}),
    ("s3:GetObject", "{bucket}/acme/projects/a/MEMORY.md", {}),
    ("s3:GetObjectVersion", "{bucket}/acme/projects/a/MEMORY.md", {}),
    ("s3:PutObject", "{bucket}/acme/projects/a/MEMORY.md", {}),
    ("s3:DeleteObject", "{bucket}/acme/projects/a/MEMORY.md", {}),
    ("s3:AbortMultipartUpload", "{bucket}/acme/projects/a/big.md", {}),
    ("kms:GenerateDataKey", "{key}", {}),
    ("kms:Decrypt", "{key}", {}),
    (
        "events:PutRule",
        "{rules}DO-NOT-DELETE-S3-Files-sync",
        {"events:managedby": ["elasticfilesystem.amazonaws.com"]},
    ),
    (
        "events:PutTargets",
        "{rules}DO-NOT-DELETE-S3-Files-sync",
        {"events:managedby": ["elasticfilesystem.amazonaws.com"]},
    ),
    ("events:DescribeRule", "{rules}DO-NOT-DELETE-S3-Files-sync", {}),
]


def test_the_s3_files_role_allows_what_the_service_does_for_the_file_system_and_no_more(
    resolved: ResolvedTemplate,
) -> None:
    (file_system,) = [r for r in resolved.resources.values() if r["Type"] == "AWS::S3Files::FileSystem"]
    role = file_system["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    bucket_logical = next(
        k for k, r in resolved.resources.items() if r["Type"] == "AWS::S3::Bucket" and "MemoryFiles" in k
    )
    bucket = resolved.get_att(bucket_logical, "Arn")
    encryption = resolved.resources[bucket_logical]["Properties"]["BucketEncryption"]
    key = resolved.resolve(
        encryption["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]
    )
    rules = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/"
    statements = resolved.role_statements(role)
    for action, pattern, context in S3_FILES_CALLS:
        resource = pattern.format(bucket=bucket, key=key, rules=rules)
        assert evaluate(statements, Request(action, resource, context)).allowed, f"{action} on {resource}"
    # ... and nothing of anyone else's: another bucket, another account's rules, rules it does not manage
    denied = [
        ("s3:GetObject", "arn:aws:s3:::another-bucket/x", {}),
        (
            "events:PutRule",
            f"{rules}someone-elses-rule",
            {"events:managedby": ["elasticfilesystem.amazonaws.com"]},
        ),
        ("events:PutRule", f"{rules}DO-NOT-DELETE-S3-Files-sync", {}),
        ("kms:Decrypt", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/another", {}),
    ]
    for action, resource, context in denied:
        assert not evaluate(statements, Request(action, resource, context)).allowed, f"{action} on {resource}"
    trust = resolved.resolve(resolved.resources[role]["Properties"]["AssumeRolePolicyDocument"])["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "elasticfilesystem.amazonaws.com"}]
    assert all("aws:SourceArn" in s["Condition"].get("ArnLike", {}) for s in trust), "confused-deputy guard"


# ---------------------------------------------------------------------- the binding, read from the template


def _function_with(variables: dict[str, Any]) -> dict[str, Any]:
    return {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": variables}}}


def test_every_resource_the_functions_are_handed_is_bound_to_the_suites_name(
    resolved: ResolvedTemplate,
) -> None:
    # each variable that names a resource binds that resource to the name the suites give it
    for resource in resolved.resources.values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        for variable, value in resource["Properties"].get("Environment", {}).get("Variables", {}).items():
            if isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value):
                target = value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0]
                assert resolved.name_of(target) == bound_name(variable), variable
    assert resolved.name_of(resolved.tenant_role()) == "TenantAccessRole"


def test_a_new_resource_is_bound_by_the_convention_without_a_list_to_extend() -> None:
    template = {
        "Resources": {
            "ImportMachine1A2B": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {}},
            "Role9": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Fn": _function_with(
                {
                    "AGENT_MEMORY_IMPORT_STATE_MACHINE_ARN": {"Ref": "ImportMachine1A2B"},
                    "AGENT_MEMORY_IAM_PRINCIPALS": {"Fn::Join": ["", [{"Fn::GetAtt": ["Role9", "Arn"]}]]},
                }
            ),
        }
    }
    resolved = resolve_template(template, REGION, BINDING)
    assert bound_name("AGENT_MEMORY_IMPORT_STATE_MACHINE_ARN") == "import-state-machine"
    assert (
        resolved.ref("ImportMachine1A2B")
        == f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:import-state-machine"
    )
    assert resolved.name_of("Role9") == "Role9"  # a text built from several resources names none of them


def test_two_variables_that_name_one_resource_differently_are_refused() -> None:
    template = {
        "Resources": {
            "Table1": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "Fn": _function_with(
                {"AGENT_MEMORY_TABLE": {"Ref": "Table1"}, "AGENT_MEMORY_JOBS_TABLE": {"Ref": "Table1"}}
            ),
        }
    }
    with pytest.raises(ValueError, match="both name Table1"):
        resolve_template(template, REGION, BINDING)
